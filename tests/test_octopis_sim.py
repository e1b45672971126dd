"""OctopiS SNR/DNR in the in-process simulator: exact counts, the DNR cases of Fig. 7, exactly-once."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scotbed.broker.sim import SimNetwork
from scotbed.filters import Filter
from scotbed.messages import Publication, Subscription, SubState
from scotbed.routing.base import LinkState
from scotbed.routing.octopis import DynamicNotificationRouting, cbv_clusters, cbv_of
from scotbed.topology import AcyclicFactor, Scot, broker_id, paper_fig2, paper_fig8

FIG2_K3 = Scot(paper_fig2(), 3)
FIG8_K5 = Scot(paper_fig8(), 5)


def is_icol(scot: Scot, src: str, dst: str) -> bool:
    return scot.by_id[src].cluster != scot.by_id[dst].cluster


def tree_path(factor: AcyclicFactor, src: str, dst: str) -> list[str]:
    """The vertices of the unique G_A path src → dst."""
    parent: dict[str, str | None] = {src: None}
    stack = [src]
    while stack:
        x = stack.pop()
        for y in factor.adjacency[x]:
            if y not in parent:
                parent[y] = x
                stack.append(y)
    out = [dst]
    while (p := parent[out[-1]]) is not None:
        out.append(p)
    return out[::-1]


def snr_cost(scot: Scot, publisher: str, interested: set[str]) -> int:
    """Inter-broker messages of one SNR notification, from the topology alone.

    In every target cluster the copy spreads over the union of the tree paths
    from the publisher's region to the interested brokers; each TSC costs one
    more message, the iCOL that enters it.
    """
    p = scot.by_id[publisher]
    cost = 0
    for i in range(scot.m):
        vertices = {scot.by_id[b].vertex for b in interested if scot.by_id[b].cluster == i}
        edges = {
            frozenset(e) for v in vertices for e in itertools.pairwise(tree_path(scot.factor, p.vertex, v))
        }
        cost += len(edges) + (1 if vertices and i != p.cluster else 0)
    return cost


# --- subscription broadcast -----------------------------------------------------------------


@pytest.mark.parametrize("routing", ["snr", "dnr"])
@pytest.mark.parametrize(("scot", "expected"), [(FIG2_K3, 17), (FIG8_K5, 74)])
def test_one_subscription_costs_tree_plus_icols(routing: str, scot: Scot, expected: int) -> None:
    n = len(scot.factor.vertices)
    assert expected == (n - 1) + n * (scot.m - 1)
    net = SimNetwork(scot, routing)
    for k, b in enumerate(scot.brokers):
        before = len(net.sent)
        assert net.subscribe(f"s{k}", b.id, "x > 1") == expected
        icol = [is_icol(scot, s.src, s.dst) for s in net.sent[before:]]
        assert icol.count(False) == n - 1
        for s, crosses in zip(net.sent[before:], icol, strict=True):
            assert isinstance(s.msg, Subscription)
            assert s.msg.state == (SubState.SECONDARY if crosses else SubState.PRIMARY)
    # every broker holds exactly one entry per subscription: PRIMARY in the host cluster, else SECONDARY
    assert set(net.table_sizes().values()) == {len(scot.brokers)}
    for k in range(len(scot.brokers)):
        assert net.unsubscribe(f"s{k}") == expected
    assert set(net.table_sizes().values()) == {0}


def test_entries_point_back_along_the_subscription_tree() -> None:
    net = SimNetwork(FIG2_K3, "snr")
    net.subscribe("s", "b-c-1", "x > 1")
    for b, algo in net.brokers.items():
        (entry,) = algo.entries()
        assert entry.cbv == 0b010
        x = FIG2_K3.by_id[b]
        if x.cluster == 1:
            assert entry.state == SubState.PRIMARY
            path = tree_path(FIG2_K3.factor, x.vertex, "c")
            assert entry.last_hop == ("" if len(path) == 1 else broker_id(path[1], 1))
        else:
            assert entry.state == SubState.SECONDARY
            assert entry.last_hop == broker_id(x.vertex, 1)


def test_cbv_helpers_roundtrip() -> None:
    assert cbv_clusters(0b10110) == {1, 2, 4}
    assert cbv_of({1, 2, 4}) == 0b10110
    assert cbv_of(set()) is None
    assert cbv_clusters(None) == set()


# --- SNR -----------------------------------------------------------------------------------


def fig7(routing: str) -> SimNetwork:
    """Fig. 7's workload on paper-fig2 × K3: P at B(b,2); S1 at B(c,0), S2 at B(c,1), S3, S4 in cluster 2."""
    net = SimNetwork(FIG2_K3, routing)
    for sid, b in [("s1", "b-c-0"), ("s2", "b-c-1"), ("s3", "b-a-2"), ("s4", "b-c-2")]:
        net.subscribe(sid, b, "x > 1")
    net.subscribe("s5", "b-f-0", "x < 0")  # matches no positive x: its tree stays unused
    return net


def path_of(net: SimNetwork, pub_id: str) -> list[tuple[str, str, int | None, bool]]:
    out = []
    for s in net.sent_for(pub_id):
        assert isinstance(s.msg, Publication)
        out.append((s.src, s.dst, s.msg.cbv, s.msg.dynamic))
    return out


def delivered(net: SimNetwork, pub_id: str) -> dict[str, int]:
    return {sub: n for (p, sub), n in net.deliveries.items() if p == pub_id}


ALL4 = {"s1": 1, "s2": 1, "s3": 1, "s4": 1}


def test_snr_fig7a_uses_the_subscription_trees() -> None:
    net = fig7("snr")
    assert net.publish("n", "b-b-2", {"x": 5}) == 6
    assert {(s, d) for s, d, _, _ in path_of(net, "n")} == {
        ("b-b-2", "b-a-2"),
        ("b-b-2", "b-c-2"),
        ("b-b-2", "b-b-0"),
        ("b-b-2", "b-b-1"),
        ("b-b-0", "b-c-0"),
        ("b-b-1", "b-c-1"),
    }
    assert delivered(net, "n") == ALL4
    # only s5: one iCOL into cluster 0, then b0 → c0 → d0 → e0 → f0
    assert net.publish("m", "b-b-2", {"x": -1}) == snr_cost(FIG2_K3, "b-b-2", {"b-f-0"}) == 5
    assert net.sent_for("m")[0].dst == "b-b-0"
    assert delivered(net, "m") == {"s5": 1}


def test_snr_copy_entering_a_tsc_reaches_both_sides_of_its_tree() -> None:
    """The publisher's region is in the middle of cluster 0's tree: the copy must go both ways."""
    net = SimNetwork(FIG2_K3, "snr")
    net.subscribe("left", "b-a-0", "x > 1")
    net.subscribe("right", "b-f-0", "x > 1")
    net.subscribe("home", "b-d-2", "x > 1")
    assert net.publish("n", "b-c-2", {"x": 3}) == snr_cost(FIG2_K3, "b-c-2", {"b-a-0", "b-f-0", "b-d-2"}) == 7
    assert delivered(net, "n") == {"left": 1, "right": 1, "home": 1}
    assert (
        sum(1 for s in net.sent_for("n") if is_icol(FIG2_K3, s.src, s.dst)) == 1
    )  # one copy enters cluster 0


# --- DNR cases (Fig. 7) ----------------------------------------------------------------------


def cases_taken(net: SimNetwork) -> dict[str, dict[str, int]]:
    out = {}
    for b, algo in net.brokers.items():
        assert isinstance(algo, DynamicNotificationRouting)
        if algo.cases:
            out[b] = dict(algo.cases)
    return out


def test_dnr_without_congestion_equals_snr_on_fig7() -> None:
    snr, dnr = fig7("snr"), fig7("dnr")
    for net in (snr, dnr):
        net.publish("n", "b-b-2", {"x": 5})
    assert path_of(snr, "n") == path_of(dnr, "n")
    assert delivered(dnr, "n") == ALL4
    assert cases_taken(dnr) == {}


def test_dnr_case_1_marked_copy_on_the_free_target_icol() -> None:
    net = fig7("dnr")
    net.overload("b-b-2", "b-b-0")
    assert net.publish("n", "b-b-2", {"x": 5}) == 6
    assert set(path_of(net, "n")) == {
        ("b-b-2", "b-a-2", None, False),
        ("b-b-2", "b-c-2", None, False),
        ("b-b-2", "b-b-1", 0b001, True),  # the marked copy: C0 rides along to B(b,1)
        ("b-b-1", "b-b-0", None, True),  # B(b,1) serves C0 and drops the header
        ("b-b-1", "b-c-1", None, False),
        ("b-b-0", "b-c-0", None, False),
    }
    assert not any(s.src == "b-b-2" and s.dst == "b-b-0" for s in net.sent_for("n"))
    assert delivered(net, "n") == ALL4
    assert cases_taken(net) == {"b-b-2": {"I": 1}}


def test_dnr_case_1_picks_the_free_icol_with_least_ce() -> None:
    net = SimNetwork(Scot(paper_fig2(), 4), "dnr")
    for i in range(3):
        net.subscribe(f"s{i}", broker_id("e", i), "x > 1")
    net.overload("b-b-3", "b-b-0")
    net.link_states[("b-b-3", "b-b-1")] = LinkState(ce=0.9)
    net.link_states[("b-b-3", "b-b-2")] = LinkState(ce=0.3)
    net.publish("n", "b-b-3", {"x": 5})
    path = path_of(net, "n")
    assert [p for p in path if p[0] == "b-b-3" or p[3]] == [
        ("b-b-3", "b-b-1", None, False),
        ("b-b-3", "b-b-2", 0b0001, True),  # least CE of the free target iCOLs carries C0
        ("b-b-2", "b-b-0", None, True),
    ]
    assert delivered(net, "n") == {"s0": 1, "s1": 1, "s2": 1}


def test_dnr_case_2_marked_copy_on_the_free_target_acol() -> None:
    net = fig7("dnr")
    net.overload("b-b-2", "b-b-0")
    net.overload("b-b-2", "b-b-1")
    net.link_states[("b-b-2", "b-a-2")] = LinkState(ce=0.8)
    assert net.publish("n", "b-b-2", {"x": 5}) == 4
    assert set(path_of(net, "n")) == {
        ("b-b-2", "b-a-2", None, False),
        ("b-b-2", "b-c-2", 0b011, True),  # least CE among the free target aCOLs
        ("b-c-2", "b-c-0", None, True),
        ("b-c-2", "b-c-1", None, True),
    }
    assert delivered(net, "n") == ALL4
    assert cases_taken(net) == {"b-b-2": {"II": 1}}


def test_dnr_case_3_all_target_links_overloaded() -> None:
    net = fig7("dnr")
    for dst, ce in [("b-a-2", 2.0), ("b-c-2", 2.0), ("b-b-0", 3.0), ("b-b-1", 1.5)]:
        net.overload("b-b-2", dst, ce=ce)
    net.overload("b-b-1", "b-b-0")
    net.overload("b-c-1", "b-c-0")
    assert net.publish("n", "b-b-2", {"x": 5}) == 5
    assert set(path_of(net, "n")) == {
        ("b-b-2", "b-a-2", None, False),  # one copy each into the congested aCOL queues, as SNR
        ("b-b-2", "b-c-2", None, False),
        ("b-b-2", "b-b-1", 0b001, True),  # the least overloaded target iCOL serves C1 and carries C0
        ("b-b-1", "b-c-1", 0b001, True),  # case II at B(b,1)
        ("b-c-1", "b-c-0", None, True),  # case III at B(c,1): the only way into C0
    }
    assert delivered(net, "n") == ALL4
    assert cases_taken(net) == {"b-b-2": {"III": 1}, "b-b-1": {"II": 1}, "b-c-1": {"III": 1}}


def test_dnr_marked_copy_entering_far_from_the_publisher_serves_the_whole_cluster() -> None:
    """Case II moves C0's entry from region b to region c: B(c,0) must route both ways on C0's tree."""
    net = SimNetwork(FIG2_K3, "dnr")
    for sid, b in [("a0", "b-a-0"), ("f0", "b-f-0"), ("b0", "b-b-0"), ("d2", "b-d-2"), ("a2", "b-a-2")]:
        net.subscribe(sid, b, "x > 1")
    net.overload("b-b-2", "b-b-0")
    net.overload("b-b-2", "b-a-2", ce=1.5)
    net.publish("n", "b-b-2", {"x": 9})
    sent = [(s.src, s.dst) for s in net.sent_for("n")]
    assert ("b-b-2", "b-c-2") in sent and ("b-c-2", "b-c-0") in sent
    assert delivered(net, "n") == {"a0": 1, "f0": 1, "b0": 1, "d2": 1, "a2": 1}
    receivers = [d for _, d in sent]
    assert len(receivers) == len(set(receivers))  # every broker, host cluster included, got one copy at most
    assert cases_taken(net) == {"b-b-2": {"II": 1}}


# --- random workloads ------------------------------------------------------------------------

ATTRS = ("x", "y")
OPS = st.sampled_from(["<", ">", "=", "between"])


@st.composite
def filters(draw: st.DrawFn) -> Filter:
    preds = []
    for attr in draw(st.lists(st.sampled_from(ATTRS), min_size=1, max_size=2, unique=True)):
        op = draw(OPS)
        if op == "between":
            lo = draw(st.integers(0, 9))
            value: object = [lo, draw(st.integers(lo, 9))]
        else:
            value = draw(st.integers(0, 9))
        preds.append({"attr": attr, "op": op, "value": value})
    return Filter.from_json(preds)


@st.composite
def workloads(draw: st.DrawFn, scot: Scot) -> list[tuple]:
    ids = [b.id for b in scot.brokers]
    directed = [(link.a, link.b) for link in scot.links] + [(link.b, link.a) for link in scot.links]
    ops: list[tuple] = []
    live: list[str] = []
    for k in range(draw(st.integers(5, 40))):
        kind = draw(st.sampled_from(["sub", "sub", "sub", "pub", "pub", "pub", "unsub", "congest"]))
        if kind == "sub" or (kind == "unsub" and not live):
            ops.append(("sub", f"s{k}", draw(st.sampled_from(ids)), draw(filters())))
            live.append(f"s{k}")
        elif kind == "unsub":
            sid = draw(st.sampled_from(live))
            live.remove(sid)
            ops.append(("unsub", sid))
        elif kind == "congest":
            rng = random.Random(draw(st.integers(0, 2**32)))
            share = draw(st.sampled_from([0.2, 0.5, 0.8, 1.0]))
            ops.append(("congest", [(d, rng.uniform(1.01, 10.0)) for d in directed if rng.random() < share]))
        else:
            attrs = {a: draw(st.integers(0, 9)) for a in ATTRS}
            ops.append(("pub", f"p{k}", draw(st.sampled_from(ids)), attrs))
    return ops


def replay(scot: Scot, routing: str, ops: list[tuple], congest: bool) -> SimNetwork:
    """Run a workload and check every notification's deliveries and copies as it goes."""
    net = SimNetwork(scot, routing)
    active: dict[str, tuple[str, Filter]] = {}
    for op in ops:
        if op[0] == "sub":
            _, sid, b, flt = op
            assert net.subscribe(sid, b, flt) == len(scot.factor.vertices) * scot.m - 1
            active[sid] = (b, flt)
        elif op[0] == "unsub":
            assert net.unsubscribe(op[1]) == len(scot.factor.vertices) * scot.m - 1
            del active[op[1]]
        elif op[0] == "congest":
            if congest:
                net.link_states.clear()
                for (src, dst), ce in op[1]:
                    net.overload(src, dst, ce=ce)
        else:
            _, pid, b, attrs = op
            case3_before = sum(getattr(a, "cases", {}).get("III", 0) for a in net.brokers.values())
            n = net.publish(pid, b, attrs)
            expected = {sid for sid, (_, f) in active.items() if f.matches(attrs)}
            assert delivered(net, pid) == dict.fromkeys(expected, 1)
            sent = net.sent_for(pid)
            receivers = [s.dst for s in sent]
            assert len(receivers) == len(set(receivers)), "a broker received a notification twice"
            assert b not in receivers
            # an overloaded iCOL only ever gets the one copy of a case III decision
            into_overloaded_icols = sum(
                1 for s in sent if is_icol(scot, s.src, s.dst) and (s.src, s.dst) in net.link_states
            )
            case3 = sum(getattr(a, "cases", {}).get("III", 0) for a in net.brokers.values()) - case3_before
            assert into_overloaded_icols <= case3
            if not net.link_states:
                interested = {active[sid][0] for sid in expected}
                assert n == snr_cost(scot, b, interested - {b})
    return net


@pytest.mark.parametrize("routing", ["snr", "dnr"])
@pytest.mark.parametrize("scot", [FIG2_K3, FIG8_K5], ids=["fig2xK3", "fig8xK5"])
def test_exactly_once_on_random_workloads(routing: str, scot: Scot) -> None:
    examples = 40 if len(scot.brokers) < 30 else 20

    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(workloads(scot))
    def check(ops: list[tuple]) -> None:
        replay(scot, routing, ops, congest=routing == "dnr")

    check()


@pytest.mark.parametrize("scot", [FIG2_K3, FIG8_K5], ids=["fig2xK3", "fig8xK5"])
def test_dnr_without_congestion_matches_snr_exactly(scot: Scot) -> None:
    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(workloads(scot))
    def check(ops: list[tuple]) -> None:
        snr = replay(scot, "snr", ops, congest=False)
        dnr = replay(scot, "dnr", ops, congest=False)
        assert [(s.src, s.dst, s.kind) for s in snr.sent] == [(s.src, s.dst, s.kind) for s in dnr.sent]
        assert snr.deliveries == dnr.deliveries

    check()
