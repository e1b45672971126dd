"""Selective pruning in the simulator: the pure parts, and properties on random trees.

Invariants (readings, "Selective pruning"): exactly-once delivery; per unsubscription, the messages
equal a full prune's (covering-active's, from the same state) restricted to the pruned zone; with
θ = 1 or no usable history it is covering-active, message for message.
"""

from __future__ import annotations

import copy
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scotbed import topology
from scotbed.broker.sim import Sent, SimNetwork
from scotbed.filters import Filter
from scotbed.messages import Publication, Unsubscription
from scotbed.routing import check_params
from scotbed.routing.selective_pruning import (
    critical_distance,
    header_after,
    prune_tuples,
)
from scotbed.wire import envelope, from_envelope


def test_critical_distance_is_the_smallest_covering_a_share_theta() -> None:
    assert critical_distance([1, 1, 4], 0.9) == 4
    assert critical_distance([1, 1, 4], 0.6) == 1
    assert critical_distance([3, 0, 2, 1, 5, 5, 5, 5, 5, 9], 0.7) == 5  # 7 of 10 need d = 5, not 9
    assert critical_distance([2], 0.0) == 2
    assert critical_distance([0, 7], 0.5) == 0


def test_prune_tuples_per_phb_and_the_full_prune_cases() -> None:
    window = [("a", 1, 1), ("a", 2, 2), ("b", 0, 0), ("a", 6, 1)]
    assert prune_tuples(window, 0.6, 1) == (("a", 2), ("b", 0))
    assert prune_tuples(window, 0.9, 1) == (("a", 6), ("b", 0))
    assert prune_tuples(window, 1.0, 1) == ()  # θ = 1: the full prune
    assert prune_tuples(window, 0.6, 3) == ()  # largest count 2 < min_count
    assert prune_tuples([], 0.6, 0) == ()  # no history


def test_header_resets_where_two_entries_match() -> None:
    pub = Publication("p", "x", {}, distance=3, count=1)
    assert header_after(pub, 0) == (4, 1)
    assert header_after(pub, 1) == (4, 1)
    assert header_after(pub, 2) == (0, 2)


def test_params_are_declared_and_typed() -> None:
    assert check_params("selective-pruning", {"similarity": 0.8, "window_s": 30, "min_count": 2}) == []
    (problem,) = check_params("selective-pruning", {"theta": 0.8})
    assert problem.startswith("theta: 'selective-pruning' has no parameter 'theta'")


PATH = topology.tree(topology.path(4))  # v0 - v1 - v2 - v3


def test_the_window_expires_and_then_the_unsubscription_is_a_full_prune() -> None:
    now = [0.0]
    for age, prune in ((5.0, (("b-v3-0", 0),)), (11.0, ())):
        net = SimNetwork(PATH, "selective-pruning", params={"window_s": 10.0}, time_s=lambda: now[0])
        now[0] = 0.0
        net.subscribe("R", "b-v0-0", "x between [0, 100]")
        net.subscribe("B", "b-v0-0", "x between [0, 10]")
        net.publish("p", "b-v3-0", {"x": 5})  # k = 2 at v0: distance 0, count 1
        now[0] = age
        mark = len(net.sent)
        net.unsubscribe("R")
        assert [s.msg.prune for s in net.sent[mark:] if isinstance(s.msg, Unsubscription)] == (
            [] if prune else [(), (), ()]
        )
        assert "R" not in net.brokers["b-v0-0"].history  # type: ignore[attr-defined]


# --- properties on random trees ---------------------------------------------------------------

_FILTERS = st.one_of(
    st.tuples(st.integers(0, 20), st.integers(0, 20)).map(lambda t: f"x between [{min(t)}, {max(t)}]"),
    st.integers(0, 20).map(lambda k: f"x > {k}"),
)
_OP = st.one_of(
    st.tuples(st.just("sub"), st.integers(0, 99), _FILTERS),
    st.tuples(st.just("sub"), st.integers(0, 99), _FILTERS),
    st.tuples(st.just("unsub"), st.integers(0, 99), st.just("")),
    st.tuples(st.just("pub"), st.integers(0, 99), st.integers(0, 22).map(str)),
    st.tuples(st.just("pub"), st.integers(0, 99), st.integers(0, 22).map(str)),
)
_TREES = st.tuples(st.integers(2, 9), st.integers(0, 10_000)).map(
    lambda t: topology.tree(topology.random_tree(*t))
)
Key = tuple[str, str, str, str]


def _key(s: Sent) -> Key:
    m = s.msg
    return (s.src, s.dst, s.kind, m.pub_id if isinstance(m, Publication) else m.sub_id)


class _Oracle:
    """Drives a network and checks every publication against the active subscriptions."""

    def __init__(self, scot: topology.Scot, routing: str, **params: object) -> None:
        self.brokers = [b.id for b in scot.brokers]
        self.net = SimNetwork(scot, routing, params=dict(params))
        self.active: dict[str, Filter] = {}
        self.n = 0

    def step(self, k: int, op: str, r: int, arg: str) -> str | None:
        """One op; for an unsubscription, the sub_id it removes (None if nothing is active)."""
        net = self.net
        if op == "sub":
            sub_id = f"s{self.n}"
            self.n += 1
            self.active[sub_id] = Filter.parse(arg)
            net.subscribe(sub_id, self.brokers[r % len(self.brokers)], self.active[sub_id])
            return None
        if op == "pub":
            attrs = {"x": int(arg)}
            pub_id = f"p{k}"
            net.publish(pub_id, self.brokers[r % len(self.brokers)], attrs)
            got = {s: c for (p, s), c in net.deliveries.items() if p == pub_id}
            assert got == {s: 1 for s, f in self.active.items() if f.matches(attrs)}, (pub_id, attrs)
            assert all(net.delivered_at[(pub_id, s)] == net.host[s] for s in got)
            return None
        if not self.active:
            return None
        sub_id = sorted(self.active)[r % len(self.active)]
        del self.active[sub_id]
        return sub_id

    def probe(self, k: int) -> None:
        """After an unsubscription: one publication for each value from every broker."""
        for x in range(0, 23, 3):
            for j in range(len(self.brokers)):
                self.step(k * 1000 + x * 10 + j, "pub", j, str(x))


def _zone_check(net: SimNetwork, sub_id: str) -> None:
    """Unsubscribe ``sub_id`` selectively and compare with a full prune from the same state."""
    full = copy.deepcopy(net)
    shb = net.host[sub_id]
    full.brokers[shb].history.pop(sub_id, None)  # type: ignore[attr-defined]  # no history: full prune
    mark = len(net.sent)
    net.unsubscribe(sub_id)
    full.unsubscribe(sub_id)
    selective = sorted(_key(s) for s in net.sent[mark:])
    zone = {shb} | {
        s.dst for s in net.sent[mark:] if isinstance(s.msg, Unsubscription) and s.msg.sub_id == sub_id
    }
    restricted = sorted(_key(s) for s in full.sent[mark:] if s.src in zone and s.dst in zone)
    assert selective == restricted


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scot=_TREES, ops=st.lists(_OP, min_size=10, max_size=50), theta=st.sampled_from([0.0, 0.5, 0.9]))
def test_random_trees_deliver_exactly_once_and_prune_exactly_the_zone(
    scot: topology.Scot, ops: list[tuple[str, int, str]], theta: float
) -> None:
    o = _Oracle(scot, "selective-pruning", similarity=theta)
    for k, (op, r, arg) in enumerate(ops):
        sub_id = o.step(k, op, r, arg)
        if sub_id is not None:
            _zone_check(o.net, sub_id)
            o.probe(k)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scot=_TREES,
    ops=st.lists(_OP, min_size=10, max_size=50),
    params=st.sampled_from([{"similarity": 1.0}, {"min_count": 1_000_000}]),
)
def test_theta_one_or_no_usable_history_is_covering_active_message_for_message(
    scot: topology.Scot, ops: list[tuple[str, int, str]], params: dict[str, object]
) -> None:
    sel, act = _Oracle(scot, "selective-pruning", **params), _Oracle(scot, "covering-active")
    for k, (op, r, arg) in enumerate(ops):
        for o in (sel, act):
            sub_id = o.step(k, op, r, arg)
            if sub_id is not None:
                o.net.unsubscribe(sub_id)
                o.probe(k)
    assert [_key(s) for s in sel.net.sent] == [_key(s) for s in act.net.sent]
    assert sel.net.table_sizes() == act.net.table_sizes()
    assert all(a.ghosts() == 0 for a in sel.net.brokers.values())  # type: ignore[attr-defined]


def test_a_ghost_is_withdrawn_when_a_covering_subscription_arrives() -> None:
    """R's ghost at v1 towards v2: a broader T from v0's side withdraws it by covering-active clean-up."""
    net = SimNetwork(PATH, "selective-pruning")
    net.subscribe("R", "b-v0-0", "x between [0, 100]")
    net.subscribe("B", "b-v1-0", "x between [0, 10]")
    net.publish("p", "b-v3-0", {"x": 5})  # at v1, R and B match: distance 0 there, 1 at v0
    assert net.unsubscribe("R") == 1  # v0 -> v1 only; ghost at v1 towards v2
    assert [a.ghosts() for a in net.brokers.values()] == [0, 1, 0, 0]  # type: ignore[attr-defined]
    mark = len(net.sent)
    net.subscribe("T", "b-v0-0", "x between [0, 200]")
    # T floods; v1 withdraws the ghost R from v2 by clean-up, and v2 (where T covers R towards v3) R from v3
    withdrawn = [(s.src, s.dst, s.kind) for s in net.sent[mark:] if s.msg.sub_id == "R"]  # type: ignore[union-attr]
    assert withdrawn == [("b-v1-0", "b-v2-0", "unsubscription"), ("b-v2-0", "b-v3-0", "unsubscription")]
    assert [a.ghosts() for a in net.brokers.values()] == [0, 0, 0, 0]  # type: ignore[attr-defined]
    assert not any("R" in a.table for a in net.brokers.values())
    assert all("R" not in a.subs for a in net.brokers.values())  # type: ignore[attr-defined]
    net.publish("q", "b-v3-0", {"x": 5})
    assert dict(net.deliveries) == {("p", "R"): 1, ("p", "B"): 1, ("q", "B"): 1, ("q", "T"): 1}
    clean_ups = [s.msg for s in net.sent[mark:] if isinstance(s.msg, Unsubscription)]
    assert list(itertools.chain.from_iterable(u.prune for u in clean_ups)) == []  # clean-ups prune fully


def test_the_header_and_the_tuple_list_cross_the_wire() -> None:
    pub = Publication("p", "x", {"x": 1}, source_broker="b-v3-0", distance=4, count=2)
    unsub = Unsubscription("R", "b-v0-0", filter=Filter.parse("x > 1"), prune=(("b-v3-0", 2), ("b-v9-0", 0)))
    assert from_envelope(envelope(pub)) == pub
    assert from_envelope(envelope(unsub)) == unsub
