"""Path length on fixed rings (issue 19): greedy routing takes friend and small-world links as the
paper's routing section says ("a node with closer, but not higher, identifier"), and the two parts
of a Vinifera path that make it longer than the paper's ≈ 3 hops are structural: clockwise-only
greedy routing, and the chain of RVs across a subscription's range that the delivery tree walks."""

from __future__ import annotations

import random

from scotbed.vinifera.config import PeerConfig
from scotbed.vinifera.interest import Subscription
from scotbed.vinifera.messages import EventMsg
from scotbed.vinifera.peer import Peer
from scotbed.vinifera.sim import Simulation

#: 16 peers, ids 0, 10, ..., 150 on a ring of 160; peer name k has id 10 k
M, N = 160, 16
CFG = PeerConfig(id_space=M, domains=(("x", 0.0, float(M)),), k_sw=1, k_f=1, beta=None)


def ring(
    friends: dict[int, list[int]], sws: dict[int, list[int]], subs: dict[int, Subscription]
) -> Simulation:
    """A correct ring of ``N`` peers plus the given friend and small-world links (by name)."""
    sim = Simulation(CFG)
    peers = {k: Peer(k, 10 * k, subs.get(k), CFG, random.Random(k)) for k in range(N)}
    for k, p in peers.items():
        p.succs, p.preds = [peers[(k + 1) % N].desc], [peers[(k - 1) % N].desc]
        p.friend_links = [peers[f].desc for f in friends.get(k, [])]
        p.sw_links = [peers[s].desc for s in sws.get(k, [])]
        p.primary = "x" if p.sub is not None else None
        sim.add(p)
    sim.trace = []
    return sim


def route(sim: Simulation, publisher: int, value: float) -> list[int]:
    """The peers an event's route phase visits, publisher first (its RV last)."""
    sim.trace.clear()
    sim.publish(publisher, (("x", value),))
    hops = [m.dst for m in sim.trace if isinstance(m, EventMsg) and m.phase == "route"]
    return [publisher, *hops]


def x(lo: float, hi: float) -> Subscription:
    return Subscription((("x", lo, hi),))


def test_ring_links_alone_walk_the_ring() -> None:
    sim = ring({}, {}, {})
    assert route(sim, 0, 145.0) == list(range(16))  # RV of 145 is id 150: 15 hops
    assert sim.peers[15].load == 1


def test_greedy_takes_the_friend_and_small_world_links_closest_before_the_point() -> None:
    # 0 knows friend 12 (id 120) and small-world 8 (id 80); 12 knows small-world 14 (id 140)
    sim = ring({0: [12]}, {0: [8], 12: [14]}, {})
    assert route(sim, 0, 145.0) == [0, 12, 14, 15]  # friend, small-world, successor: 3 hops
    # a point before the friend: the small-world link (80) is the closest link not past it
    assert route(sim, 0, 95.0) == [0, 8, 9, 10]


def test_clockwise_greedy_goes_round_for_a_point_just_behind() -> None:
    # the RV of 135 is 14 (id 140), the predecessor of 15; greedy never steps back, so 15 goes
    # round the ring (15 hops) where a bidirectional walk would take one: this is structure, not a bug
    sim = ring({}, {}, {})
    assert route(sim, 15, 135.0) == [15, *range(15)]
    sim = ring({}, {15: [7]}, {})
    assert route(sim, 15, 135.0) == [15, 7, *range(8, 15)]


def test_the_delivery_tree_walks_the_chain_of_rvs_across_a_range() -> None:
    # 0 subscribes x in [11, 59]: its lookup reaches the RV of 11 (id 20) and goes along the RVs
    # (20, 30], (30, 40], ... up to 60; an event at 55 reaches its RV (60) and comes back down that
    # chain (the publisher is the subscriber here): 6 hops of route, 6 of tree, where the paper's
    # count (≈ 3) has room for neither
    sim = ring({}, {}, {0: x(11.0, 59.0)})
    sim.inject(sim.peers[0].subscribe(1))
    assert sorted(n for n, p in sim.peers.items() if p.crt.rows) == [1, 2, 3, 4, 5, 6]
    eid = sim.publish(0, (("x", 55.0),))
    rec = sim.records[eid]
    assert rec.deliveries == {0: 6 + 6} and rec.tree_hops == {0: 6}
    tree = [(m.src, m.dst) for m in sim.trace if isinstance(m, EventMsg) and m.phase == "tree"]
    assert tree == [(6, 5), (5, 4), (4, 3), (3, 2), (2, 1), (1, 0)]
