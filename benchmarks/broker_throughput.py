"""Notifications per second one broker forwards, against a bare relay of the same stack.

    python benchmarks/broker_throughput.py [--quick] [--notifications 20000] [--routing flooding]
        [--memory-subs 10000] [--profile B1.svg] [--json]

Two chains of three processes on loopback, run one after the other, flooded alike (``--notifications`` in
``Publish`` calls of ``--batch``, from a client of the first process; a client of the last one
receives every notification on a catch-all subscription):

- brokers: publisher → B0 → B1 → B2 → subscriber, with ``--subs`` stock-like subscriptions at B2 besides
  the catch-all (under ``rpf`` every broker holds them); event logs written to files, as in a run;
- relays: the same layout with ``benchmarks/relay.py``, a grpc.aio relay that forwards each batch as it
  came, without routing, matching, logging or resends: the limit of the stack (gRPC, protobuf, asyncio).

Figures, each for both chains: the CPU time (user + system) each process used per notification during
the flood, which a loaded host hardly moves (the figure to compare A/B on a shared host); the middle
process's forwarding rate (notifications / (last ``notif_out``
− first ``notif_in``), from B1's event log, from the relay's counters) and the end-to-end rate
(publisher's first call to the last delivery); the broker's as a fraction of the relay's. Memory: RSS of
each broker idle (ready, no subscriptions), with ``--memory-subs`` subscriptions held at B2 (a chain of
its own, filters no flood matches), and the peak under the flood. ``--profile FILE`` records B1 with
py-spy during the flood (``.svg`` flame graph, else collapsed stacks). Every process shares the host's
cores, so a figure is only comparable with one from the same run on the same host.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil

from scotbed import topology
from scotbed.broker.client import BrokerClient
from scotbed.broker.eventlog import read_events
from scotbed.broker.fleet import flush_all, wait_quiescent
from scotbed.broker.launcher import LocalCluster

RELAY = Path(__file__).with_name("relay.py")
MB = 1024 * 1024


class Watch:
    """The largest RSS each process reached while the block ran (sampled every ``period_s``) and the CPU
    time it used (user + system): unlike a rate, CPU per notification hardly moves with the host's load."""

    def __init__(self, pids: Sequence[int], period_s: float = 0.02) -> None:
        self.procs = [psutil.Process(p) for p in pids]
        self.peak = [0] * len(pids)
        self.cpu_s = [0.0] * len(pids)
        self.period_s = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for k, p in enumerate(self.procs):
                self.peak[k] = max(self.peak[k], p.memory_info().rss)
            self._stop.wait(self.period_s)

    def _cpu(self) -> list[float]:
        return [sum(p.cpu_times()[:2]) for p in self.procs]

    def __enter__(self) -> Watch:
        self.cpu_s = self._cpu()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.cpu_s = [b - a for a, b in zip(self.cpu_s, self._cpu(), strict=True)]

    def mb(self) -> list[float]:
        return [round(b / MB, 1) for b in self.peak]

    def cpu_us_per(self, n: int) -> list[float]:
        return [round(s / n * 1e6, 1) for s in self.cpu_s]


def rss_mb(pids: Sequence[int]) -> list[float]:
    return [round(psutil.Process(p).memory_info().rss / MB, 1) for p in pids]


@contextlib.contextmanager
def py_spy(pid: int | None, out: str | None) -> Iterator[None]:
    """py-spy recording ``pid`` for the block (nothing without ``out``)."""
    if out is None or pid is None:
        yield
        return
    fmt = "flamegraph" if out.endswith(".svg") else "raw"
    cmd = ["py-spy", "record", "--pid", str(pid), "--rate", "100", "--format", fmt, "-o", out]
    spy = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    time.sleep(1.0)  # attached before the flood starts
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=30)


async def flood(first: str, last: str, n: int, batch: int, subs: int) -> float:
    """Seconds from the first Publish call until the last process delivered all ``n`` notifications."""
    async with BrokerClient(first) as pub, BrokerClient(last) as sub:
        streams = [await sub.subscribe(f"s{k}", f'symbol = "S{k}" and price > 10') for k in range(subs)]
        catch_all = await sub.subscribe("all", "price >= 0")
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            await pub.publish(
                [
                    (f"p{k}", {"symbol": f"S{k % 500}", "price": k % 200})
                    for k in range(start, min(n, start + batch))
                ]
            )
        while len(catch_all.received) < n:
            await asyncio.sleep(0.005)
            if time.perf_counter() - t0 > 300:
                raise TimeoutError(f"only {len(catch_all.received)} of {n} arrived")
        total = time.perf_counter() - t0
        for s in [*streams, catch_all]:
            await s.close()
    return total


def broker_run(args: argparse.Namespace) -> dict[str, Any]:
    scot = topology.tree(topology.path(3))
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalCluster.from_topology(scot, tmp, routing=args.routing, matching=args.matching) as cluster,
    ):
        ids = list(cluster.addresses())
        addrs = cluster.addresses()
        pids = [b.proc.pid for b in cluster.brokers.values() if b.proc]
        asyncio.run(wait_quiescent(addrs, timeout_s=30))
        with py_spy(pids[args.profile_at], args.profile), Watch(pids) as watch:
            total = asyncio.run(
                flood(addrs[ids[0]], addrs[ids[2]], args.notifications, args.batch, args.subs)
            )
        asyncio.run(flush_all(addrs))
        events = read_events(cluster.event_log(ids[1]))
    first_in = min(e["ts_ns"] for e in events if e["ev"] == "notif_in")
    last_out = max(e["ts_ns"] for e in events if e["ev"] == "notif_out")
    return {
        "middle_msgs_per_s": round(args.notifications / ((last_out - first_in) / 1e9), 1),
        "end_to_end_msgs_per_s": round(args.notifications / total, 1),
        "cpu_us_per_notification": watch.cpu_us_per(args.notifications),
        "rss_flood_peak_mb": watch.mb(),
    }


@contextlib.contextmanager
def relay_chain(length: int) -> Iterator[tuple[list[str], list[int]]]:
    """``length`` relay processes, each forwarding to the next; yields their addresses and pids, first to
    last."""
    procs: list[subprocess.Popen[str]] = []
    addresses: list[str] = []
    try:
        for k in reversed(range(length)):
            cmd = [sys.executable, str(RELAY), "--name", f"R{k}"]
            if addresses:
                cmd += ["--next", addresses[0]]
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
            procs.append(p)
            line = p.stdout.readline() if p.stdout else ""
            if not line.startswith("PORT "):
                raise RuntimeError(f"relay R{k} did not start (printed {line!r})")
            addresses.insert(0, f"127.0.0.1:{line.split()[1]}")
        yield addresses, [p.pid for p in reversed(procs)]
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=10)


async def relay_counters(address: str) -> dict[str, int]:
    async with BrokerClient(address) as c:
        return dict((await c.status()).counters)


def relay_run(args: argparse.Namespace) -> dict[str, Any]:
    with relay_chain(3) as (addrs, pids):
        with Watch(pids) as watch:
            total = asyncio.run(flood(addrs[0], addrs[2], args.notifications, args.batch, 0))
        c = asyncio.run(relay_counters(addrs[1]))
    return {
        "middle_msgs_per_s": round(c["notif_out"] / ((c["last_out_ns"] - c["first_in_ns"]) / 1e9), 1),
        "end_to_end_msgs_per_s": round(args.notifications / total, 1),
        "cpu_us_per_notification": watch.cpu_us_per(args.notifications),
    }


async def subscribe_many(address: str, n: int, window: int = 200) -> list[Any]:
    """``n`` open subscriptions at ``address`` (``window`` at a time), with filters no flood matches."""
    client = BrokerClient(address)
    streams: list[Any] = []
    for start in range(0, n, window):
        batch = [client.subscribe(f"m{k}", f'symbol = "M{k}"') for k in range(start, min(n, start + window))]
        streams += await asyncio.gather(*batch)
    return [client, *streams]


async def close_all(opened: list[Any]) -> None:
    client, *streams = opened
    for s in streams:
        await s.close()
    await client.close()


def memory_run(args: argparse.Namespace) -> dict[str, Any]:
    scot = topology.tree(topology.path(3))
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalCluster.from_topology(scot, tmp, routing=args.routing, matching=args.matching) as cluster,
    ):
        ids = list(cluster.addresses())
        addrs = cluster.addresses()
        pids = [b.proc.pid for b in cluster.brokers.values() if b.proc]

        async def run() -> dict[str, Any]:
            await wait_quiescent(addrs, timeout_s=30)
            idle = rss_mb(pids)
            opened = await subscribe_many(addrs[ids[2]], args.memory_subs)
            await wait_quiescent(addrs, timeout_s=120)
            held = rss_mb(pids)
            await close_all(opened)
            return {"rss_idle_mb": idle, "rss_subscribed_mb": held}

        return asyncio.run(run())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smaller run, under 30 s on an idle 2-core host")
    ap.add_argument("--notifications", type=int, help="default 20000, --quick 5000")
    ap.add_argument("--batch", type=int, default=500, help="notifications per Publish call")
    ap.add_argument("--routing", default="flooding", choices=["flooding", "rpf", "bid"])
    ap.add_argument("--matching", default="counting")
    ap.add_argument("--subs", type=int, default=100)
    ap.add_argument("--memory-subs", type=int, help="subscriptions held for the RSS figure; default 10000")
    ap.add_argument("--profile", help="record B1 with py-spy during the flood into this file")
    ap.add_argument(
        "--profile-at", type=int, choices=(0, 1, 2), default=1, help="the broker --profile records (B1)"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.notifications = args.notifications or (5_000 if args.quick else 20_000)
    args.memory_subs = args.memory_subs if args.memory_subs is not None else 10_000
    relay = relay_run(args)
    broker = broker_run(args)
    memory = memory_run(args) if args.memory_subs and not args.quick else {}
    out = {
        "routing": args.routing,
        "matching": args.matching,
        "notifications": args.notifications,
        "subscriptions": args.subs + 1,
        "broker": broker,
        "relay": relay,
        "middle_fraction_of_relay": round(broker["middle_msgs_per_s"] / relay["middle_msgs_per_s"], 3),
        "end_to_end_fraction_of_relay": round(
            broker["end_to_end_msgs_per_s"] / relay["end_to_end_msgs_per_s"], 3
        ),
        "memory_subscriptions": args.memory_subs if memory else 0,
        **memory,
    }
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(
        f"{args.routing}/{args.matching}, {args.notifications} notifications, {args.subs + 1} subscriptions"
    )
    for what, key, frac in (
        ("middle broker forwards", "middle_msgs_per_s", "middle_fraction_of_relay"),
        ("end to end           ", "end_to_end_msgs_per_s", "end_to_end_fraction_of_relay"),
    ):
        print(f"  {what}: {broker[key]:9.1f}/s   relay {relay[key]:9.1f}/s   broker/relay {out[frac]:.3f}")
    print(f"  CPU µs per notification (B0, B1, B2): {broker['cpu_us_per_notification']}")
    print(f"                     relay (R0, R1, R2): {relay['cpu_us_per_notification']}")
    print(f"  RSS MB (B0, B1, B2): under the flood (peak) {broker['rss_flood_peak_mb']}")
    if memory:
        print(f"                       idle {memory['rss_idle_mb']}")
        print(f"                       {args.memory_subs} subscriptions at B2 {memory['rss_subscribed_mb']}")


if __name__ == "__main__":
    main()
