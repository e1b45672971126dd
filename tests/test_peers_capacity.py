"""The per-round message capacity (paper §V-D) on real peer processes: a peer takes at most X event
messages per round and drops the rest (``ev_drop``), as the simulator does.

One run of 8 gossiping Vinifera processes with X = 4: while one event is published per round the
capacity is ample (no drop, hit ratio 1); with 10 events in one round it is tight: peers drop
messages, interested peers miss events, but none is delivered twice and the count is exact: in every
(peer, round) at most X messages are taken, exactly X where one was dropped, and every event message
sent to a peer is either taken or dropped.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from scotbed import contract
from scotbed.broker.eventlog import read_events
from scotbed.routing import DEFAULT_PEER_ROUTING
from scotbed.vinifera.analysis import report as peer_analysis
from scotbed.vinifera.config import PeerConfig
from scotbed.vinifera.process.cluster import PeerCluster
from scotbed.vinifera.workload import SKEWED, Draw, Shape, distinct_ids

X = 4
N = 8


@pytest.mark.slow
def test_capacity_bounds_event_messages_per_peer_and_round(tmp_path: Path) -> None:
    cfg = PeerConfig(domains=(("x", 0.0, 1000.0),), k_sw=1, k_f=1)
    rng = random.Random(11)
    draw = Draw(cfg, Shape(kind=SKEWED, width=0.3), rng)
    ids = distinct_ids(N, cfg.id_space, rng)
    peers = {k: (ids[k], draw.subscription()) for k in range(N)}
    with PeerCluster(tmp_path, peers, cfg, DEFAULT_PEER_ROUTING, capacity=X) as cluster:
        cluster.bootstrap({k: [(k + 1) % N, (k + 3) % N] for k in range(N)})
        for _ in range(15):
            cluster.round()
        ample = [e for _ in range(6) for e in cluster.round([(rng.randrange(N), draw.event())])]
        tight = cluster.round([(rng.randrange(N), draw.event()) for _ in range(10)])
        states = cluster.quiescent()
        cluster.flush()
        events = [e for n in peers for e in read_events(cluster.event_log(n))]
    assert all(s["bounced"] == 0 and s["refused"] == 0 for s in states.values())
    recs, _ = peer_analysis.records(events)
    by_eid = {r.eid: r for r in recs}
    assert sorted(by_eid) == ample + tight

    calm = [by_eid[e] for e in ample]
    assert sum(r.dropped for r in calm) == 0
    assert sum(len(r.interested) for r in calm) > 0 and all(r.deliveries.keys() == r.interested for r in calm)

    busy = [by_eid[e] for e in tight]
    assert sum(r.dropped for r in busy) > 0
    assert sum(len(r.interested - r.deliveries.keys()) for r in busy) > 0
    assert all(r.deliveries.keys() <= r.interested and r.extra_deliveries == 0 for r in recs)

    def per(ev: str) -> Counter[tuple[int, int]]:
        return Counter((contract.peer_name(e["node"]), e["round"]) for e in events if e["ev"] == ev)

    taken, dropped = per(contract.EV_IN), per(contract.EV_DROP)
    assert max(taken.values()) == X
    assert dropped and all(taken[k] == X for k in dropped)
    sent = Counter(e["dst"] for e in events if e["ev"] == contract.EV_OUT)
    for n in peers:
        assert sent[n] == sum(v for (p, _), v in (taken + dropped).items() if p == n), n
