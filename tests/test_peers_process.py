"""Peers as real processes (scotbed.vinifera.process): the same state machine as the simulator behind gRPC.

On Fig. 2's fixed ring the processes and the simulator agree exactly (rendezvous, receivers, hop
counts, the path); a run of 10 peers that build their overlay by gossip delivers every event exactly
once to every matching subscriber (the oracle, read back from the event logs).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from test_vinifera import CFG, FIG2, FIG2_SUBS, P, Q, R, S, T, U, V, wired

from scotbed import contract
from scotbed.broker.eventlog import read_events
from scotbed.routing import DEFAULT_PEER_ROUTING, PEER_ALGORITHMS
from scotbed.vinifera.analysis import report as peer_analysis
from scotbed.vinifera.config import PeerConfig
from scotbed.vinifera.process.cluster import PeerCluster, accounted, link_counts
from scotbed.vinifera.workload import SKEWED, Draw, Shape, distinct_ids


def _events(cluster: PeerCluster) -> list[dict]:
    cluster.flush()
    return [
        e for n in cluster.peers if cluster.event_log(n).exists() for e in read_events(cluster.event_log(n))
    ]


def test_quiescence_counts_a_timed_out_send_either_way() -> None:
    """Peer 0 sent 3 messages to 1, one of them timed out (DEADLINE_EXCEEDED on a loaded host): 1 may
    have handled 2 or 3 of them, not 1 and not 4."""

    def state(sent: dict, unsure: dict, handled: dict) -> dict:
        return {"sent_to": sent, "unsure_to": unsure, "handled_from": handled}

    for handled, ok in ((1, False), (2, True), (3, True), (4, False)):
        states = {0: state({"1": 2}, {"1": 1}, {}), 1: state({}, {}, {"0": handled})}
        counts = link_counts(states)
        assert counts == ((0, 0, 0), (2, 1, handled), (0, 0, 0), (0, 0, 0))
        assert all(map(accounted, counts)) is ok


def test_processes_and_simulator_agree_on_fig2(tmp_path: Path) -> None:
    sim = wired(FIG2, FIG2_SUBS, {Q: [R]})
    peers = {n: (i, FIG2_SUBS.get(n)) for n, i in FIG2.items()}
    with PeerCluster(tmp_path, peers, CFG, DEFAULT_PEER_ROUTING) as cluster:
        cluster.wire(
            {
                n: {"succs": p.succs, "preds": p.preds, "friends": p.friend_links, "primary": p.primary}
                for n, p in sim.peers.items()
            }
        )
        for n in (Q, P):
            sim.inject(sim.peers[n].subscribe(1))
            cluster.subscribe(n)
        eid = cluster.publish(V, (("x", 84.0),))
        sim_eid = sim.publish(V, (("x", 84.0),))
        states = cluster.quiescent()
        events = _events(cluster)
    recs, names = peer_analysis.records(events)
    got, want = recs[eid], sim.records[sim_eid]
    assert names == set(FIG2) and len(recs) == 1
    assert (got.deliveries, got.tree_hops, got.received, got.interested) == (
        want.deliveries,
        want.tree_hops,
        want.received,
        want.interested,
    )
    assert got.deliveries == {Q: 8, P: 9} and got.received == {R: 2, S: 2, T: 2, U: 1, Q: 1, P: 1}
    hops = [
        (contract.peer_name(e["node"]), e["dst"], e["phase"]) for e in events if e["ev"] == contract.EV_OUT
    ]
    route = [(V, R), (R, S), (S, T), (T, U)]
    tree = [(U, T), (T, S), (S, R), (R, Q), (Q, P)]
    assert sorted(hops) == sorted([(a, b, "route") for a, b in route] + [(a, b, "tree") for a, b in tree])
    lookups = sorted(
        (contract.peer_name(e["node"]), e["dst"]) for e in events if e["ev"] == contract.LOOKUP_OUT
    )
    assert lookups == sorted([(Q, R), (R, S), (S, T), (T, U), (P, Q), (Q, R), (R, S), (S, T), (T, U)])
    assert {n: s["load"] for n, s in states.items()} == {n: p.load for n, p in sim.peers.items()}
    assert all(s["refused"] == 0 and s["bounced"] == 0 for s in states.values())


@pytest.mark.slow
@pytest.mark.parametrize("routing", sorted(PEER_ALGORITHMS))
def test_gossip_built_overlay_delivers_every_event_once(tmp_path: Path, routing: str) -> None:
    cfg = PeerConfig(domains=(("x", 0.0, 1000.0), ("y", 0.0, 1000.0)), k_sw=2, k_f=2)
    rng = random.Random(5)
    draw = Draw(cfg, Shape(kind=SKEWED, width=0.3), rng)
    n = 10
    ids = distinct_ids(n, cfg.id_space, rng)
    peers = {k: (ids[k], draw.subscription()) for k in range(n)}
    contacts = {k: [(k + 1) % n, (k + 3) % n] for k in range(n)}
    with PeerCluster(tmp_path, peers, cfg, routing) as cluster:
        cluster.bootstrap(contacts)
        for _ in range(20):
            cluster.round()
        states = cluster.quiescent()
        order = sorted(peers, key=lambda k: peers[k][0])
        assert [states[order[(i + 1) % n]]["name"] for i in range(n)] == [states[k]["succ"] for k in order]
        pubs = [(rng.randrange(n), draw.event()) for _ in range(15)]
        for pub, ev in pubs:
            cluster.publish(pub, ev)
        events = _events(cluster)
    recs, names = peer_analysis.records(events)
    assert names == set(peers) and len(recs) == 15
    assert sum(len(r.interested) for r in recs) >= 15
    assert all(r.deliveries.keys() == r.interested and r.extra_deliveries == 0 for r in recs)


@pytest.mark.slow
def test_a_killed_peer_is_routed_around_after_the_ring_heals(tmp_path: Path) -> None:
    cfg = PeerConfig(domains=(("x", 0.0, 1000.0),), k_sw=1, k_f=2)
    rng = random.Random(9)
    draw = Draw(cfg, Shape(kind=SKEWED, width=0.3), rng)
    n = 8
    ids = distinct_ids(n, cfg.id_space, rng)
    peers = {k: (ids[k], draw.subscription()) for k in range(n)}
    with PeerCluster(tmp_path, peers, cfg, DEFAULT_PEER_ROUTING) as cluster:
        cluster.bootstrap({k: [(k + 1) % n, (k + 2) % n] for k in range(n)})
        for _ in range(15):
            cluster.round()
        cluster.kill(3)
        for _ in range(12):
            cluster.round()
        states = cluster.quiescent()
        live = sorted((peers[k][0], k) for k in peers if k != 3)
        assert [states[k]["succ"] for _, k in live] == [
            live[(i + 1) % len(live)][1] for i in range(len(live))
        ]
        assert sum(s["bounced"] for s in states.values()) > 0
        for _ in range(10):
            cluster.publish(rng.choice([k for _, k in live]), draw.event())
        events = _events(cluster)
    recs, _ = peer_analysis.records(events, failed={3: 15})
    assert len(recs) == 10 and sum(len(r.interested) for r in recs) >= 10
    assert all(r.deliveries.keys() == r.interested and r.extra_deliveries == 0 for r in recs)
