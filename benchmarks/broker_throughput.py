"""Notifications per second one broker forwards: publisher → B0 → B1 → B2 on real processes.

    python benchmarks/broker_throughput.py [--notifications 20000] [--routing flooding] [--json]

B1, the middle broker, receives every notification from a link, matches it
against its routing table (``--subs`` stock-like subscriptions held at B2, so
under ``rpf`` every broker holds them) and forwards it to B2. B1's rate is
taken from its own event log: notifications / (last ``notif_out`` − first
``notif_in``). The end-to-end rate (publisher to the subscriber's stream) is
reported too; it includes B2's per-delivery stream writes. Event logs are
written to files, as in a run. On a 2-core machine the three brokers and the
client share the cores, so this is a lower bound.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from typing import Any

from scotbed import topology
from scotbed.broker.client import BrokerClient
from scotbed.broker.eventlog import read_events
from scotbed.broker.fleet import flush_all, status_all, wait_quiescent
from scotbed.broker.launcher import LocalCluster


async def drive(cluster: LocalCluster, n: int, batch: int, subs: int) -> dict[str, Any]:
    ids = list(cluster.addresses())
    addrs = cluster.addresses()
    async with BrokerClient(addrs[ids[0]]) as pub, BrokerClient(addrs[ids[2]]) as sub:
        streams = [await sub.subscribe(f"s{k}", f'symbol = "S{k}" and price > 10') for k in range(subs)]
        catch_all = await sub.subscribe("all", "price >= 0")
        await wait_quiescent(addrs, timeout_s=30)
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            await pub.publish(
                [
                    (f"p{k}", {"symbol": f"S{k % 500}", "price": k % 200})
                    for k in range(start, min(n, start + batch))
                ]
            )
        while len(catch_all.received) < n:
            await asyncio.sleep(0.01)
            if time.perf_counter() - t0 > 300:
                raise TimeoutError(f"only {len(catch_all.received)} of {n} arrived")
        total = time.perf_counter() - t0
        status = await status_all(addrs)
        for s in [*streams, catch_all]:
            await s.close()
    await flush_all(addrs)
    events = read_events(cluster.event_log(ids[1]))
    first_in = min(e["ts_ns"] for e in events if e["ev"] == "notif_in")
    last_out = max(e["ts_ns"] for e in events if e["ev"] == "notif_out")
    return {
        "notifications": n,
        "forward_rate_msgs_per_s": round(n / ((last_out - first_in) / 1e9), 1),
        "end_to_end_msgs_per_s": round(n / total, 1),
        "middle_broker_counters": dict(status[ids[1]].counters),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notifications", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=500, help="notifications per Publish call")
    ap.add_argument("--routing", default="flooding", choices=["flooding", "rpf", "bid"])
    ap.add_argument("--matching", default="counting")
    ap.add_argument("--subs", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    scot = topology.tree(topology.path(3))
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalCluster.from_topology(scot, tmp, routing=args.routing, matching=args.matching) as cluster,
    ):
        result = asyncio.run(drive(cluster, args.notifications, args.batch, args.subs))
    result.update(routing=args.routing, matching=args.matching, subscriptions=args.subs + 1)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(
            f"{args.routing}/{args.matching}: {result['forward_rate_msgs_per_s']} notifications/s forwarded "
            f"by the middle broker; {result['end_to_end_msgs_per_s']}/s end to end"
        )


if __name__ == "__main__":
    main()
