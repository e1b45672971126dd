"""A broker's memory over a long run at a steady rate: does its resident set grow?

    python benchmarks/broker_soak.py [--minutes 10] [--rate 500] [--routing rpf|flooding] [--json]

Publisher → B0 → B1 → B2 → one catch-all subscriber that counts what it receives, on real processes
with file event logs (``--routing``, ``counting``). Every second the publisher sends ``--rate`` / 10
notifications ten times (one ``Publish`` call each), for ``--minutes``; every ``--sample-s`` the
resident set (RSS) of each broker is read. After ``--warmup-s`` (imports, the first allocations
and the event log's buffers settle) the RSS samples are fitted with a least-squares line
(scipy.stats.linregress): its slope in MB per minute, with its 95 % interval, is the growth; the
first and last samples after the warm-up and the peak are printed beside it, and the deliveries
the subscriber counted beside the notifications published.

Flooding remembers the ids of the notifications it saw, up to ``routing.flooding.SEEN_CAPACITY``,
to drop copies on a cyclic overlay: under it a broker grows by design until that bound, so the
default is ``rpf``, whose state is its subscriptions only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from typing import Any

import grpc
import psutil
from scipy import stats

from scotbed import topology
from scotbed.broker.client import BrokerClient
from scotbed.broker.fleet import wait_quiescent
from scotbed.broker.launcher import LocalCluster
from scotbed.filters import Filter
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.wire import filter_to_pb

MB = 1 << 20
CHAIN = 3


class Counter:
    """A catch-all subscription at the last broker that only counts its deliveries."""

    def __init__(self) -> None:
        self.received = 0

    async def read(self, client: BrokerClient) -> None:
        req = pb.SubscribeRequest(
            sub_id="all", subscriber="soak", filter=filter_to_pb(Filter.parse("price >= 0"))
        )
        call = client.broker.Subscribe(req)
        try:
            while (ev := await call.read()) is not grpc.aio.EOF:
                self.received += len(ev.deliveries.items)
        except asyncio.CancelledError:
            call.cancel()


async def soak(args: argparse.Namespace, addrs: list[str], pids: list[int]) -> dict[str, Any]:
    counter = Counter()
    samples: list[tuple[float, list[float]]] = []
    per_call = max(1, round(args.rate / 10))
    async with BrokerClient(addrs[0]) as pub, BrokerClient(addrs[-1]) as sub:
        reader = asyncio.create_task(counter.read(sub))
        await asyncio.sleep(1.0)  # the subscription reaches every broker of the chain (flooding: none)
        t0 = time.monotonic()
        end = t0 + args.minutes * 60
        next_sample = t0
        k = 0
        while (now := time.monotonic()) < end:
            if now >= next_sample:
                samples.append((now - t0, [psutil.Process(p).memory_info().rss / MB for p in pids]))
                next_sample += args.sample_s
            batch: list[tuple[str, dict[str, str | int | float]]] = [
                (f"p{k + i}", {"symbol": f"S{(k + i) % 500}", "price": (k + i) % 200})
                for i in range(per_call)
            ]
            await pub.publish(batch)
            k += per_call
            await asyncio.sleep(max(0.0, t0 + k / (per_call * 10) - time.monotonic()))
        deadline = time.monotonic() + 60
        while counter.received < k and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
    return {"published": k, "received": counter.received, "samples": samples}


def growth(samples: list[tuple[float, list[float]]], warmup_s: float) -> list[dict[str, float]]:
    """Per broker after the warm-up: the RSS line's slope (MB/min) with its 95 % interval, first, last;
    and the peak of the whole run."""
    kept = [(t, rss) for t, rss in samples if t >= warmup_s]
    minutes = [t / 60 for t, _ in kept]
    out = []
    for b in range(len(kept[0][1])):
        rss = [r[b] for _, r in kept]
        fit = stats.linregress(minutes, rss)
        half = stats.t.ppf(0.975, len(rss) - 2) * fit.stderr
        out.append(
            {
                "slope_mb_per_min": fit.slope,
                "slope_ci95": (fit.slope - half, fit.slope + half),
                "first_mb": rss[0],
                "last_mb": rss[-1],
                "peak_mb": max(r[b] for _, r in samples),
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=500.0, help="notifications per second")
    ap.add_argument("--sample-s", type=float, default=10.0, help="seconds between RSS samples")
    ap.add_argument("--warmup-s", type=float, default=60.0, help="samples before this are not fitted")
    ap.add_argument(
        "--routing", default="rpf", choices=["rpf", "flooding"], help="flooding remembers every id it saw"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalCluster.from_topology(topology.tree(topology.path(CHAIN)), tmp, routing=args.routing) as cluster,
    ):
        ids = list(cluster.addresses())
        addrs = cluster.addresses()
        pids = [cluster.brokers[b].proc.pid for b in ids]  # type: ignore[union-attr]
        asyncio.run(wait_quiescent(addrs, timeout_s=30))
        run = asyncio.run(soak(args, [addrs[b] for b in ids], pids))
    out = {
        "brokers": ids,
        "routing": args.routing,
        "minutes": args.minutes,
        "rate": args.rate,
        "published": run["published"],
        "received": run["received"],
        "growth": growth(run["samples"], args.warmup_s),
        "load_average": psutil.getloadavg(),
    }
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(
        f"{CHAIN}-broker chain ({args.routing}), {args.rate:g} notifications/s for {args.minutes:g} min: "
        f"{out['received']} of {out['published']} received (load average {out['load_average'][0]:.2f})"
    )
    for b, g in zip(ids, out["growth"], strict=True):
        lo, hi = g["slope_ci95"]
        print(
            f"  {b}: RSS {g['first_mb']:.1f} → {g['last_mb']:.1f} MB after the warm-up"
            f" (peak {g['peak_mb']:.1f}),"
            f" slope {g['slope_mb_per_min']:+.3f} MB/min [{lo:+.3f}, {hi:+.3f}]"
        )


if __name__ == "__main__":
    main()
