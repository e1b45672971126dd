"""Vinifera vs the Ferry-like baseline, uniform vs Zipf-skewed, in the round simulator (paper §V).

    python benchmarks/vinifera.py [--peers 1000] [--warmup 40] [--rounds 20] [--events 10]
                                  [--attrs 1] [--width 0.05] [--k-sw 0] [--k-f 8] [--seed 1]

Every peer holds one subscription (ranges ``width`` of each domain wide, centres uniform or Zipf over
100 buckets) and ids drawn uniformly; peers join one by one from 5 random contacts, gossip for
``warmup`` rounds, then ``events`` events per round (values drawn like the subscriptions) are
published by random peers for ``rounds`` rounds. Printed per system and workload: rounds until the
ring matched the sorted ids, overhead (share of event messages received by uninterested peers),
mean path length (hops publisher → subscriber), hit ratio, the load CDF (share of events a peer
received without interest), the idle share, the maximum load, duplicate event messages and messages
per peer and round by kind. Defaults are the paper's: 1,000 peers, K_sw = 0, K_f = log2(N) − 2.
"""

from __future__ import annotations

import argparse
import random
import time

from scotbed.vinifera import metrics as m
from scotbed.vinifera.baseline import BaselinePeer
from scotbed.vinifera.config import PeerConfig
from scotbed.vinifera.peer import Peer
from scotbed.vinifera.sim import Simulation
from scotbed.vinifera.workload import SKEWED, UNIFORM, Draw, Shape, distinct_ids

CDF_POINTS = (0.0, 0.1, 0.2, 0.3, 0.6)


def run(make: type[Peer], kind: str, args: argparse.Namespace) -> dict[str, object]:
    domains = tuple((f"a{i}", 0.0, 1000.0) for i in range(args.attrs))
    cfg = PeerConfig(domains=domains, k_sw=args.k_sw, k_f=args.k_f)
    rng = random.Random(args.seed)
    sim = Simulation(cfg, make=make, seed=args.seed)
    draw = Draw(cfg, Shape(kind=kind, width=args.width), rng)
    sim.grow(distinct_ids(args.peers, cfg.id_space, rng), [draw.subscription() for _ in range(args.peers)])
    converged = None
    for r in range(1, args.warmup + 1):
        sim.round()
        if converged is None and sim.ring_ok():
            converged = r
    sent_before = sum(sim.traffic.values())
    records = []
    for _ in range(args.rounds):
        pubs = [(rng.choice(sorted(sim.peers)), draw.event()) for _ in range(args.events)]
        records += [sim.records[e] for e in sim.round(pubs)]
    ld = m.loads(records, sim.peers)
    cdf = m.load_cdf(ld.values(), CDF_POINTS)
    per = args.peers * (args.warmup + args.rounds)
    return {
        "converged_round": converged,
        "overhead": round(m.overhead(records), 3),
        "path_length": round(m.path_length(records), 2),
        "tree_depth": round(m.tree_depth(records), 2),
        "hit_ratio": round(m.hit_ratio(records), 4),
        "load_cdf": {p: round(x, 3) for p, x in zip(CDF_POINTS, cdf, strict=True)},
        "idle_share": round(m.idle_share(ld.values()), 3),
        "max_load": round(max(ld.values()), 3),
        "dup_event_msgs": sum(p.duplicates for p in sim.peers.values()),
        "id_moves": sum(p.ver for p in sim.peers.values()),
        "msgs_per_peer_round": {k: round(v / per, 2) for k, v in sorted(sim.traffic.items())},
        "msgs_measured": sum(sim.traffic.values()) - sent_before,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peers", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--events", type=int, default=10)
    ap.add_argument("--attrs", type=int, default=1)
    ap.add_argument("--width", type=float, default=0.05)
    ap.add_argument("--k-sw", type=int, default=0)
    ap.add_argument("--k-f", type=int, default=None, help="default log2(N) - 2")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=("vinifera", "baseline"), default=None)
    ap.add_argument("--kind", choices=(UNIFORM, SKEWED), default=None)
    args = ap.parse_args()
    if args.k_f is None:
        args.k_f = max(args.peers.bit_length() - 2, 1)
    systems = {"vinifera": Peer, "baseline": BaselinePeer}
    for name, make in systems.items():
        if args.only not in (None, name):
            continue
        for kind in (UNIFORM, SKEWED):
            if args.kind not in (None, kind):
                continue
            t0 = time.monotonic()
            out = run(make, kind, args)
            print(f"{name:9s} {kind:8s} {time.monotonic() - t0:6.1f}s {out}", flush=True)


if __name__ == "__main__":
    main()
