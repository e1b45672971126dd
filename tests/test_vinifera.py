"""Exact small cases of the Vinifera peer logic (scotbed.vinifera): fixed ids, links and subscriptions,
the friend links chosen, the primary attribute, the rendezvous of an event, the exact path of a
subscription lookup and of an event with its receivers, and one load-balancing id move."""

from __future__ import annotations

import random

from scotbed.vinifera.baseline import BaselinePeer
from scotbed.vinifera.config import PeerConfig
from scotbed.vinifera.interest import Subscription, jaccard, primary_attribute
from scotbed.vinifera.messages import Desc, EventMsg, Load, Lookup, Moved
from scotbed.vinifera.metrics import overhead, path_length
from scotbed.vinifera.overlay import Cyclon, small_world
from scotbed.vinifera.peer import Peer
from scotbed.vinifera.ring import name_hash, ophash, owned, rendezvous, split_at, subtract, union
from scotbed.vinifera.sim import Simulation

CFG = PeerConfig(id_space=100, domains=(("x", 0.0, 100.0), ("y", 0.0, 100.0)), k_sw=0, k_f=2, beta=5)


def sub(**ranges: tuple[float, float]) -> Subscription:
    return Subscription(tuple((a, lo, hi) for a, (lo, hi) in ranges.items()))


def wired(
    ids: dict[int, int], subs: dict[int, Subscription], extra: dict[int, list[int]], make: type[Peer] = Peer
) -> Simulation:
    """Peers ``name -> id`` on a correct ring, plus the ``extra`` links, primary attribute x."""
    sim = Simulation(CFG, make=make)
    peers = {n: make(n, i, subs.get(n), CFG, random.Random(n)) for n, i in ids.items()}
    order = sorted(peers.values(), key=lambda p: p.id)
    for k, p in enumerate(order):
        p.succs, p.preds = [order[(k + 1) % len(order)].desc], [order[k - 1].desc]
        p.friend_links = [peers[e].desc for e in extra.get(p.name, [])]
        p.primary = "x" if p.sub is not None else None
        sim.add(p)
    sim.trace = []
    return sim


def test_ring_arithmetic() -> None:
    assert [ophash(v, 0, 100, 100) for v in (0, 49.9, 99.99, 100)] == [0, 49, 99, 99]
    assert [rendezvous(p, [10, 30, 50, 70, 90]) for p in (35, 30, 95, 0)] == [50, 30, 10, 10]
    assert owned(90, 10, 100) == [(91, 99), (0, 10)] and owned(30, 50, 100) == [(31, 50)]
    assert subtract((20, 80), [(31, 50)]) == [(20, 30), (51, 80)]
    assert split_at((75, 85), [76, 82]) == [(76, (75, 76)), (82, (77, 85))]
    assert union([(80, 90), (75, 85), (91, 95)]) == [(75, 95)]


def test_friend_links_are_the_highest_utility_on_the_primary_attribute() -> None:
    me = Peer(0, 50, sub(x=(20, 40)), CFG, random.Random(0))
    cands = [
        Desc(1, 45, 0, sub(x=(60, 80))),  # predecessor
        Desc(2, 55, 0, sub(x=(25, 45))),  # successor: a ring link, not a friend
        Desc(3, 10, 0, sub(x=(25, 45))),  # utility 15/25
        Desc(4, 90, 0, sub(x=(30, 40))),  # utility 10/20
        Desc(5, 70, 0, sub(x=(35, 60))),  # utility 5/40
        Desc(6, 20, 0, sub(x=(0, 10))),  # utility 0
    ]
    me.learn(cands)
    assert (me.pred.name, me.succ.name) == (1, 2)  # type: ignore[union-attr]
    assert [d.name for d in me.friend_links] == [3, 4]
    assert jaccard((20, 40), (25, 45)) == 0.6 and jaccard((20, 40), (60, 80)) == 0.0


def test_primary_attribute_counts_overlapping_candidates_ties_to_the_lowest_index() -> None:
    mine = sub(x=(0, 10), y=(50, 60))
    others = [sub(y=(55, 70)), sub(y=(40, 52), x=(50, 60)), sub(x=(5, 6))]
    assert primary_attribute(mine, others, ("x", "y")) == "y"
    assert primary_attribute(mine, others[1:], ("x", "y")) == "x"
    assert primary_attribute(sub(y=(0, 1)), [], ("x", "y")) == "y"


# Fig. 2 on a ring of 100: P=2, Q=5, V=30, R=60, S=76, T=82, U=95; Q knows R, R and the rest only
# their ring links. Q subscribes x in [75, 85], P x in [80, 90]; V publishes x = 84.
FIG2 = {0: 2, 1: 5, 2: 30, 3: 60, 4: 76, 5: 82, 6: 95}
P, Q, V, R, S, T, U = range(7)
FIG2_SUBS = {P: sub(x=(80, 90)), Q: sub(x=(75, 85)), U: sub(x=(0, 10))}


def _hops(trace: list, kind: type) -> list[tuple]:
    return [(m.src, m.dst, getattr(m, "iv", None)) for m in trace if isinstance(m, kind)]


def test_range_lookup_splits_at_the_targets_and_fills_the_crts() -> None:
    sim = wired(FIG2, FIG2_SUBS, {Q: [R]})
    sim.inject(sim.peers[Q].subscribe(1))
    want = [(Q, R, (75, 85)), (R, S, (75, 85)), (S, T, (77, 85)), (T, U, (83, 85))]
    assert _hops(sim.trace, Lookup) == want  # S keeps (60, 76], T (76, 82], U the rest
    sim.trace.clear()
    sim.inject(sim.peers[P].subscribe(1))
    assert _hops(sim.trace, Lookup) == [
        (P, Q, (80, 90)),
        (Q, R, (80, 90)),
        (R, S, (80, 90)),
        (S, T, (80, 90)),
        (T, U, (83, 90)),
    ]
    crt = {n: sim.peers[n].crt for n in FIG2}
    assert crt[R].ranges(Q, "x") == [(75, 90)]  # Q's and P's requests aggregated (Fig. 2b)
    assert (crt[S].ranges(R, "x"), crt[T].ranges(S, "x"), crt[U].ranges(T, "x")) == (
        [(75, 90)],
        [(77, 90)],
        [(83, 90)],
    )
    assert crt[Q].ranges(P, "x") == [(80, 90)] and crt[V].rows == {} and crt[P].rows == {}


def test_event_goes_to_its_rendezvous_then_down_the_crts_once() -> None:
    sim = wired(FIG2, FIG2_SUBS, {Q: [R]})
    for n in (Q, P):
        sim.inject(sim.peers[n].subscribe(1))
    sim.trace.clear()
    eid = sim.publish(V, (("x", 84.0),))
    ev = [(m.src, m.dst, m.phase) for m in sim.trace if isinstance(m, EventMsg)]
    route = [(V, R), (R, S), (S, T), (T, U)]
    tree = [(U, T), (T, S), (S, R), (R, Q), (Q, P)]
    assert ev == [(a, b, "route") for a, b in route] + [(a, b, "tree") for a, b in tree]
    rec = sim.records[eid]
    assert rec.deliveries == {Q: 8, P: 9} and rec.tree_hops == {Q: 4, P: 5} and rec.interested == {Q, P}
    assert rec.received == {R: 2, S: 2, T: 2, U: 1, Q: 1, P: 1}
    assert overhead([rec]) == 7 / 9 and path_length([rec]) == 8.5
    # greedy routing only goes clockwise: point 3 (RV Q, owning 3..5) goes the long way round
    sim.trace.clear()
    sim.publish(V, (("y", 3.0),))
    assert [(m.src, m.dst) for m in sim.trace] == [(V, R), (R, S), (S, T), (T, U), (U, P), (P, Q)]
    assert sim.peers[Q].load == 1  # RV of an event it has no interest in
    assert sum(p.duplicates for p in sim.peers.values()) == 0 and rec.extra_deliveries == 0


def test_baseline_rendezvous_is_the_hash_of_the_attribute_name() -> None:
    assert name_hash("x", 100) == 23  # RV of every x event and subscription: V (30)
    sim = wired(FIG2, FIG2_SUBS, {}, make=BaselinePeer)
    for n in (Q, P):
        sim.inject(sim.peers[n].subscribe(1))
    assert _hops(sim.trace, Lookup) == [(Q, V, (23, 23)), (P, Q, (23, 23)), (Q, V, (23, 23))]
    sim.trace.clear()
    eid = sim.publish(R, (("x", 84.0),))
    route = [(R, S), (S, T), (T, U), (U, P), (P, Q), (Q, V)]
    ev = [(m.src, m.dst, m.phase) for m in sim.trace]
    assert ev == [(a, b, "route") for a, b in route] + [(V, Q, "tree"), (Q, P, "tree")]
    assert sim.records[eid].deliveries == {Q: 7, P: 8} and sim.peers[V].load == 1


def test_one_load_balancing_id_move_halves_the_successors_load() -> None:
    sim = wired({0: 10, 1: 40, 2: 80}, {}, {})
    z, p, s = (sim.peers[n] for n in range(3))
    p.load, s.load, s.rv_points = 2, 10, [50, 60, 70, 75, 78]
    loads = [m for m in s.tick(4) if isinstance(m, Load)]
    assert loads == [Load(2, 1, 10, 70)]
    sent = p.receive(loads[0], 4)
    assert (p.id, p.ver, p.load) == (70, 1, 6)
    assert sent == [Moved(1, 2, Desc(1, 70, 1, None), load=6), Moved(1, 0, Desc(1, 70, 1, None))]
    for m in sent:
        sim.peers[m.dst].receive(m, 4)
    assert (s.load, s.pred.id, s.own(), s.rv_points) == (6, 70, [(71, 80)], [75, 78])  # type: ignore[union-attr]
    assert z.succ.id == 70  # type: ignore[union-attr]
    # within the handover, an event at 65 reaches p (its new RV) and p also hands it to s
    out = p.receive(EventMsg(0, 1, 9, "x", 65, (("x", 65.0),), "route", 1), 5)
    assert [(m.dst, m.phase) for m in out] == [(2, "tree")]
    assert p.receive(Load(2, 1, 7, 78), 6) == []  # within β: no move


def test_cyclon_shuffle_swaps_the_oldest_for_a_sample() -> None:
    c = Cyclon(size=3, shuffle_len=2, view={n: (Desc(n, n, 0, None), n) for n in (1, 2, 3)})
    started = c.start(Desc(0, 0, 0, None), random.Random(3))
    assert started is not None
    q, sent = started
    assert q == 3 and sent[0] == Desc(0, 0, 0, None) and len(sent) == 2 and set(c.view) == {1, 2}
    given = sent[1].name
    # a free slot takes 7, then 8 replaces the entry we gave away; ourselves (0) is never kept
    c.merge(0, [Desc(7, 7, 0, None), Desc(0, 0, 0, None), Desc(8, 8, 0, None)], sent)
    kept = ({1, 2} - {given}).pop()
    assert set(c.view) == {kept, 7, 8}
    assert (c.view[7][1], c.view[8][1], c.view[kept][1]) == (0, 0, kept + 1)  # ages: new 0, kept aged


def test_small_world_draws_are_over_peer_distances_not_below_the_ring_spacing() -> None:
    me, m = Desc(0, 0, 0, None), 1024
    cands = [Desc(d, d, 0, None) for d in (1, 2, 16, 64, 256)]
    # a draw of 1 on [1, M) aims at the spacing (16), M^0.6 = 64 at 16 * (1024 / 16)^0.6 = 194
    assert [d.id for d in small_world(me, cands, [1.0, 64.0], m, spacing=16)] == [16, 256]
    assert [d.id for d in small_world(me, cands, [1.0, 64.0], m)] == [1, 64]
