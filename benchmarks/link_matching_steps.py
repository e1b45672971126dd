"""Matching steps of link matching vs one centralised PST, by hop count (Gryphon's "matching time").

    python benchmarks/link_matching_steps.py [--subs 2000 4000 8000] [--brokers 7] [--events 200]

On a path of brokers (so that subscribers sit 0..n-1 hops from the publisher's broker), Gryphon's workload
(10 attributes x 3 values, don't-care probability calibrated to 1 % matching) is subscribed through the real
``link-matching`` plug-in in the simulator. For every notification published at the path's first broker,
the cumulative matching steps (PST nodes visited) of the brokers on the way to each hop count are compared
with the steps of one PST holding every subscription (the centralised, match-first baseline). A matching
step is a visit of one PST node, as in the paper.
"""

from __future__ import annotations

import argparse
import statistics
from collections import deque
from collections.abc import Mapping
from typing import Any

from scotbed import topology
from scotbed.broker.sim import SimNetwork
from scotbed.matching.pst import PstMatcher
from scotbed.messages import Publication
from scotbed.workloads import gryphon as g

SCHEMA = g.GryphonSchema(attributes=10, values=3)


def cumulative_steps(net: SimNetwork, source: str, attrs: Mapping[str, Any]) -> dict[int, int]:
    """Hop count -> cumulative link-matching steps of the brokers from ``source`` to that hop."""
    out: dict[int, int] = {}
    queue: deque[tuple[str, str | None, int, int]] = deque([(source, None, 0, 0)])
    while queue:
        broker, from_hop, hops, steps = queue.popleft()
        d = net.brokers[broker].on_publication(Publication("e", "bench", dict(attrs), hops=hops), from_hop)
        steps += d.steps or 0
        out[hops] = max(out.get(hops, 0), steps)
        queue.extend((f.hop, broker, hops + 1, steps) for f in d.forwards)
    return out


def run(subs: int, brokers: int, events: int, seed: int) -> dict[str, float]:
    scot = topology.tree(topology.path(brokers))
    ids = [b.id for b in scot.brokers]
    dont_care = g.calibrate(SCHEMA, [0], 0.01, seed)
    filters = [f for fs in g.subscriptions(SCHEMA, [0] * subs, 1, dont_care, seed) for f in fs]
    net = SimNetwork(scot, "link-matching", matching="pst")
    central = PstMatcher()
    for k, f in enumerate(filters):
        net.subscribe(f"s{k}", ids[k % len(ids)], f)
        central.add(k, f)
    row: dict[str, float] = {"subscriptions": subs}
    per_hop: dict[int, list[int]] = {}
    central_steps = []
    for attrs in g.notifications(SCHEMA, 0, events, seed + 1):
        central.match(attrs)
        central_steps.append(central.last_steps)
        for hops, steps in cumulative_steps(net, ids[0], attrs).items():
            per_hop.setdefault(hops, []).append(steps)
    row["centralised"] = round(statistics.mean(central_steps), 1)
    for hops in sorted(per_hop):
        row[f"LM {hops + 1} broker(s)"] = round(statistics.mean(per_hop[hops]), 1)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subs", type=int, nargs="+", default=[2000, 4000, 8000])
    ap.add_argument("--brokers", type=int, default=7)
    ap.add_argument("--events", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    for subs in args.subs:
        row = run(subs, args.brokers, args.events, args.seed)
        print("  ".join(f"{k}: {v:g}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
