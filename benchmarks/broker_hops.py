"""Time per broker visit: notifications one at a time through a 5-broker chain, at a low rate.

    python benchmarks/broker_hops.py [--quick] [--notifications 1000] [--rate 100] [--json]

Publisher → B0 → B1 → B2 → B3 → B4 → one catch-all subscriber, on real processes with file event logs.
Each notification is published alone (one ``Publish`` call), ``1 / --rate`` seconds after the previous
one, so no queue builds up: what is measured is the cost of one notification, not a throughput. From the
event logs (one host, one clock), for every notification:

- visit: ``notif_in`` → ``notif_out`` inside B0..B3 (routing, matching, encoding, logging);
- wire to wire: ``notif_out`` at B(k) → ``notif_out`` at B(k+1) for B1..B3 (the visit plus the link
  before it: gRPC write, loopback, read, decode, input queue);
- last visit: ``notif_in`` → ``deliver`` inside B4;
- end to end per broker: the client's send time → the subscriber's receipt, divided by 5.

Each is printed as mean and p99 in milliseconds. Every process shares the host's cores: compare only
figures from the same host in the same session.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections import defaultdict
from typing import Any

from scotbed import topology
from scotbed.broker.client import BrokerClient
from scotbed.broker.eventlog import read_events
from scotbed.broker.fleet import flush_all, wait_quiescent
from scotbed.broker.launcher import LocalCluster

CHAIN = 5


async def trickle(first: str, last: str, n: int, rate: float) -> list[float]:
    """Publish ``n`` notifications one per call at ``rate``/s; each one's end-to-end time in ms."""
    async with BrokerClient(first) as pub, BrokerClient(last) as sub:
        stream = await sub.subscribe("all", "price >= 0")
        start = time.perf_counter()
        for k in range(n):
            await asyncio.sleep(max(0.0, start + k / rate - time.perf_counter()))
            await pub.publish([(f"p{k}", {"symbol": f"S{k % 500}", "price": k % 200})])
        deadline = time.perf_counter() + 60
        while len(stream.received) < n:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"only {len(stream.received)} of {n} arrived")
            await asyncio.sleep(0.01)
        e2e = [
            (t - d.notification.sent_ns) / 1e6
            for d, t in zip(stream.received, stream.received_ns, strict=True)
        ]
        await stream.close()
    return e2e


def summary(ms: list[float]) -> dict[str, float]:
    return {
        "mean_ms": round(statistics.fmean(ms), 3),
        "p99_ms": round(statistics.quantiles(ms, n=100)[98], 3),
        "n": len(ms),
    }


def per_visit(logs: list[list[dict[str, Any]]]) -> dict[str, list[float]]:
    """Milliseconds per notification and broker, from the chain's event logs (first broker first)."""
    stamp: list[dict[tuple[str, str], int]] = []
    for events in logs:
        at: dict[tuple[str, str], int] = {}
        for e in events:
            if e["ev"] in ("notif_in", "notif_out", "deliver"):
                at.setdefault((e["ev"], e["pub_id"]), e["ts_ns"])
        stamp.append(at)
    pubs = {p for (ev, p) in stamp[0] if ev == "notif_in"}
    out: dict[str, list[float]] = defaultdict(list)
    for p in pubs:
        for k in range(CHAIN - 1):
            out["visit"].append((stamp[k][("notif_out", p)] - stamp[k][("notif_in", p)]) / 1e6)
            if k > 0:
                out["wire_to_wire"].append(
                    (stamp[k][("notif_out", p)] - stamp[k - 1][("notif_out", p)]) / 1e6
                )
        out["last_visit"].append((stamp[-1][("deliver", p)] - stamp[-1][("notif_in", p)]) / 1e6)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smaller run, under 30 s on an idle 2-core host")
    ap.add_argument("--notifications", type=int, help="default 1000, --quick 300")
    ap.add_argument("--rate", type=float, default=100.0, help="notifications per second")
    ap.add_argument("--routing", default="flooding")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    n = args.notifications or (300 if args.quick else 1000)
    scot = topology.tree(topology.path(CHAIN))
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalCluster.from_topology(scot, tmp, routing=args.routing, matching="counting") as cluster,
    ):
        ids = list(cluster.addresses())
        addrs = cluster.addresses()

        async def run() -> list[float]:
            await wait_quiescent(addrs, timeout_s=30)
            e2e = await trickle(addrs[ids[0]], addrs[ids[-1]], n, args.rate)
            await flush_all(addrs)
            return e2e

        e2e = asyncio.run(run())
        figures = per_visit([read_events(cluster.event_log(b)) for b in ids])
    figures["end_to_end_per_broker"] = [ms / CHAIN for ms in e2e]
    out = {
        "brokers": CHAIN,
        "notifications": n,
        "rate": args.rate,
        **{k: summary(v) for k, v in figures.items()},
    }
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"{CHAIN}-broker chain, {n} notifications one at a time at {args.rate:g}/s ({args.routing})")
    for key, what in (
        ("visit", "visit, notif_in → notif_out (B0..B3)"),
        ("wire_to_wire", "wire to wire, notif_out → notif_out (B1..B3)"),
        ("last_visit", "last visit, notif_in → deliver (B4)"),
        ("end_to_end_per_broker", "end to end / 5"),
    ):
        print(f"  {what:46s} mean {out[key]['mean_ms']:7.3f} ms   p99 {out[key]['p99_ms']:7.3f} ms")


if __name__ == "__main__":
    main()
