"""The covering family in the simulator: exact counts, exactly-once delivery, rpf bounds, packing."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scotbed import topology
from scotbed.broker.sim import SimNetwork
from scotbed.filters import Filter
from scotbed.messages import Publication, Subscription, Unsubscription
from scotbed.routing.covering import _Covering

TREE = topology.tree(topology.kary(2, 2))  # v0; v1, v2; v3, v4 under v1; v5, v6 under v2
FIG2 = topology.tree(topology.paper_fig2())  # the path a-b-c-d-e-f
COVERING = ("covering-active", "covering-lazy", "covering-packing")


def _kinds(net: SimNetwork, since: int = 0) -> Counter[str]:
    return Counter(s.kind for s in net.sent[since:])


def _assert_empty(net: SimNetwork) -> None:
    assert set(net.table_sizes().values()) == {0}
    for algo in net.brokers.values():
        assert isinstance(algo, _Covering)
        assert algo.covering_state() == 0 and not algo.subs
        assert all(not h for h in algo.held.values())


def _root_then_covered(routing: str) -> SimNetwork:
    net = SimNetwork(TREE, routing)
    assert net.subscribe("root", "b-v3-0", "x between [0, 100]") == 6
    for i in range(3):  # covered by root and not by each other: quenched at their host broker
        assert net.subscribe(f"s{i}", "b-v3-0", f"x between [{i}, {i + 10}]") == 0
    # covered by root except towards root's own host: v6 -> v2 -> v0 -> v1 -> v3 only
    assert net.subscribe("o", "b-v6-0", "x between [5, 6]") == 4
    assert [(s.src, s.dst) for s in net.sent[-4:]] == [
        ("b-v6-0", "b-v2-0"),
        ("b-v2-0", "b-v0-0"),
        ("b-v0-0", "b-v1-0"),
        ("b-v1-0", "b-v3-0"),
    ]
    return net


@pytest.mark.parametrize("routing", COVERING)
def test_covered_subscriptions_stop_at_the_first_broker_and_unsubscription_releases_them(
    routing: str,
) -> None:
    net = _root_then_covered(routing)
    assert net.table_sizes() == {
        "b-v0-0": 2,
        "b-v1-0": 2,
        "b-v2-0": 2,
        "b-v3-0": 5,
        "b-v4-0": 1,
        "b-v5-0": 1,
        "b-v6-0": 2,
    }
    net.publish("p1", "b-v5-0", {"x": 5})
    assert net.deliveries == {("p1", s): 1 for s in ("root", "s0", "s1", "s2", "o")}
    mark = len(net.sent)
    cost = net.unsubscribe("root")
    if routing == "covering-packing":
        # one unsubscription per link of root's tree, each carrying the 3 released roots s0..s2
        assert cost == 6 and _kinds(net, mark) == {"unsubscription": 6}
        assert all(isinstance(s.msg, Unsubscription) and len(s.msg.packed) == 3 for s in net.sent[mark:])
    else:
        # 6 unsubscriptions + s0..s2 on each of the 6 links (o stays quenched: s0 covers it)
        assert cost == 24 and _kinds(net, mark) == {"unsubscription": 6, "subscription": 18}
    net.publish("p2", "b-v4-0", {"x": 5})
    net.publish("p3", "b-v4-0", {"x": 50})
    assert {k for k in net.deliveries if k[0] != "p1"} == {("p2", s) for s in ("s0", "s1", "s2", "o")}
    for sub in ("s0", "s1", "s2", "o"):
        net.unsubscribe(sub)
    _assert_empty(net)


def test_active_removes_covered_state_lazy_keeps_it_and_active_can_cost_more_than_rpf() -> None:
    costs: dict[str, list[int]] = {}
    for routing in ("rpf", *COVERING):
        net = SimNetwork(TREE, routing)
        subs = [net.subscribe(f"s{i}", "b-v3-0", f"x between [{i}, {i + 10}]") for i in range(3)]
        assert subs == [6, 6, 6]
        root = net.subscribe("root", "b-v3-0", "x between [0, 100]")
        sizes = set(net.table_sizes().values())
        unsub_root = net.unsubscribe("root")
        costs[routing] = [root, unsub_root, *(net.unsubscribe(f"s{i}") for i in range(3))]
        if routing in ("covering-active", "covering-packing"):
            # root on 6 links, then one clean-up unsubscription per covered subscription per link
            assert sizes == {4, 1}
            assert _kinds(net)["unsubscription"] == 18 + 6 + 18  # clean-ups are never packed
        else:
            assert sizes == {4}
        if routing != "rpf":
            _assert_empty(net)
    assert costs["rpf"] == [6, 6, 6, 6, 6]
    assert costs["covering-lazy"] == [6, 6, 6, 6, 6]
    assert costs["covering-active"] == [24, 24, 6, 6, 6]  # s0..s2 cleaned up, then sent again
    assert costs["covering-packing"] == [24, 6, 6, 6, 6]


@pytest.mark.parametrize("scot", [TREE, FIG2], ids=["tree7", "fig2"])
def test_packing_sends_fewer_messages_than_lazy_on_an_unsubscription_burst(scot: topology.Scot) -> None:
    brokers = [b.id for b in scot.brokers]
    burst: dict[str, int] = {}
    for routing in ("rpf", *COVERING):
        net = SimNetwork(scot, routing)
        for r in range(4):  # disjoint roots, each covering 8 subscriptions issued after it
            net.subscribe(f"r{r}", brokers[r % len(brokers)], f"x between [{100 * r}, {100 * r + 99}]")
        for r in range(4):
            for k in range(8):
                lo = 100 * r + 10 * k
                net.subscribe(f"c{r}.{k}", brokers[(r + k) % len(brokers)], f"x between [{lo}, {lo + 5}]")
        mark = len(net.sent)
        for r in range(4):
            net.unsubscribe(f"r{r}")
        burst[routing] = len(net.sent) - mark
        for r in range(4):
            net.publish(f"p{r}", brokers[-1 - r], {"x": 100 * r + 12})
        assert set(net.deliveries) == {(f"p{r}", f"c{r}.1") for r in range(4)}
    n = len(brokers) - 1
    # packing: one unsubscription per link per root, the released subscriptions ride inside it
    assert burst["covering-packing"] == 4 * n < burst["covering-lazy"] == burst["covering-active"]
    assert burst["rpf"] == 4 * n


@pytest.mark.parametrize("routing", COVERING)
def test_a_covering_chain_is_released_one_level_at_a_time(routing: str) -> None:
    net = SimNetwork(FIG2, routing)
    assert net.subscribe("r", "b-a-0", "x between [0, 100]") == 5
    assert net.subscribe("m", "b-a-0", "x between [0, 50]") == 0
    assert net.subscribe("c", "b-a-0", "x between [10, 20]") == 0
    # r leaves: only m (the new root) travels; c stays held back, now under m
    assert net.unsubscribe("r") == (5 if routing == "covering-packing" else 10)
    assert net.unsubscribe("m") == (5 if routing == "covering-packing" else 10)
    net.publish("p", "b-f-0", {"x": 15})
    assert net.deliveries == {("p", "c"): 1}
    assert net.unsubscribe("c") == 5
    _assert_empty(net)


# --- random interleaved workloads against the naive oracle ---------------------------------------------

_FILTERS = st.one_of(  # small value space: long covering chains are common
    st.tuples(st.integers(0, 12), st.integers(0, 10)).map(lambda t: f"x between [{t[0]}, {t[0] + t[1]}]"),
    st.tuples(st.integers(0, 12), st.integers(0, 10), st.integers(0, 1)).map(
        lambda t: f"x between [{t[0]}, {t[0] + t[1]}] and y = {t[2]}"
    ),
    st.integers(0, 20).map(lambda k: f"x > {k}"),
    st.integers(0, 1).map(lambda k: f"y = {k}"),
)
_SUB = st.tuples(st.just("sub"), st.integers(0, 99), _FILTERS)
_PUB = st.tuples(st.just("pub"), st.integers(0, 99), st.tuples(st.integers(0, 22), st.integers(-1, 1)))
_OP = st.one_of(_SUB, _SUB, st.tuples(st.just("unsub"), st.integers(0, 99), st.just("")), _PUB)


def _point(f: Filter) -> dict[str, object]:
    """A notification that matches ``f`` (for the filters ``_FILTERS`` draws)."""
    attrs: dict[str, object] = {"x": 0, "y": 0}
    for p in f.predicates:
        attrs[p.attr] = p.value[0] if p.op == "between" else p.value + (1 if p.op == ">" else 0)
    assert f.matches(attrs)
    return attrs


def _publish(
    net: SimNetwork, pub_id: str, broker: str, attrs: dict[str, object], active: dict[str, Filter]
) -> None:
    net.publish(pub_id, broker, attrs)
    got = {s: c for (p, s), c in net.deliveries.items() if p == pub_id}
    assert got == {s: 1 for s, f in active.items() if f.matches(attrs)}, (pub_id, attrs)
    assert all(net.delivered_at[(pub_id, s)] == net.host[s] for s in got)


def _replay(scot: topology.Scot, routing: str, ops: list[tuple[str, int, object]]) -> tuple[SimNetwork, int]:
    """Run ``ops`` checking every notification against the oracle, then unsubscribe everything.

    Returns the network and the number of messages sent before that final teardown."""
    brokers = [b.id for b in scot.brokers]
    net = SimNetwork(scot, routing, matching="counting")
    active: dict[str, Filter] = {}
    n_subs = 0
    for k, (op, r, arg) in enumerate(ops):
        if op == "sub":
            sub_id = f"s{n_subs}"
            n_subs += 1
            active[sub_id] = Filter.parse(str(arg))
            net.subscribe(sub_id, brokers[r % len(brokers)], active[sub_id])
        elif op == "unsub" and active:
            sub_id = sorted(active)[r % len(active)]
            net.unsubscribe(sub_id, active.pop(sub_id))
            for j, f in enumerate(active.values()):  # probe: one notification each survivor wants
                _publish(net, f"p{k}.{j}", brokers[(r + j) % len(brokers)], _point(f), active)
        elif op == "pub":
            assert isinstance(arg, tuple)
            attrs = {"x": arg[0]} if arg[1] < 0 else {"x": arg[0], "y": arg[1]}
            _publish(net, f"p{k}", brokers[r % len(brokers)], attrs, active)
    mark = len(net.sent)
    for sub_id in sorted(active):
        net.unsubscribe(sub_id)
    return net, mark


def _count(net: SimNetwork, kind: type, upto: int | None = None) -> int:
    return sum(isinstance(s.msg, kind) for s in net.sent[:upto])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scot=st.sampled_from([TREE, FIG2]), ops=st.lists(_OP, min_size=20, max_size=80))
def test_random_interleaved_workload_delivers_exactly_once_and_clears_every_table(
    scot: topology.Scot, ops: list[tuple[str, int, object]]
) -> None:
    rpf, _ = _replay(scot, "rpf", ops)
    for routing in COVERING:
        net, _ = _replay(scot, routing, ops)
        _assert_empty(net)
        # notifications follow exactly rpf's paths: only towards matching subscribers
        assert _count(net, Publication) == _count(rpf, Publication)
        if routing == "covering-lazy":
            assert _count(net, Subscription) <= _count(rpf, Subscription)
            assert _count(net, Unsubscription) <= _count(rpf, Unsubscription)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scot=st.sampled_from([TREE, FIG2]), ops=st.lists(st.one_of(_SUB, _PUB), min_size=5, max_size=60))
def test_before_any_unsubscription_no_form_sends_more_subscriptions_than_rpf(
    scot: topology.Scot, ops: list[tuple[str, int, object]]
) -> None:
    rpf, rpf_mark = _replay(scot, "rpf", ops)
    for routing in COVERING:
        net, mark = _replay(scot, routing, ops)
        assert _count(net, Subscription, mark) <= _count(rpf, Subscription, rpf_mark)
        assert _count(net, Publication) == _count(rpf, Publication)
