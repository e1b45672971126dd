"""The Locust subscribers' receive path: a broker's ``deliver`` → the subscriber's receipt, by stream count.

    python benchmarks/subscriber_receive.py [--streams 500] [--rate 100] [--seconds 20] [--channels pool|user]

One broker process (file event log) and one client process that plays the Locust workers' receive
path: gevent monkey-patched, gRPC's gevent mode, ``--streams`` Subscribe streams opened through
:class:`scotbed.workloads.grpc_user.GrpcClient`, each read in a greenlet of its own, as
:class:`scotbed.workloads.users.Subscriber` does. ``--channels pool`` shares one channel per broker
(:class:`~scotbed.workloads.grpc_user.ClientPool`, what the users do); ``user`` opens one channel per
stream (one per Locust user, the layout before the pool). Subscription ``k`` matches ``symbol = "Sk"``;
an asyncio publisher sends ``--rate`` notifications/s, one per call, to symbols in turn, so every
notification has exactly one receiver and no queue builds up.

Printed, in ms (mean, p50, p99): ``deliver`` in the broker's event log → the client's receive time
(one host, one clock), the client process's CPU per delivery, and its gevent loop's lateness (a
greenlet sleeping 100 ms, as the workers' ``client_loop`` probe). Compare figures of one session only.
The parent process stays off gevent (importing locust monkey-patches a process), so only the client
imports the workloads package.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def client(
    address: str, streams: int, channels: str, wait_s: float | None, out: Path, seconds: float
) -> None:
    """The client process: open the streams, read them until ``seconds`` after the ready file, dump."""
    from gevent import monkey

    monkey.patch_all()
    import gevent
    from locust.env import Environment

    from scotbed.filters import Filter
    from scotbed.workloads.grpc_user import ClientPool, GrpcClient, init_gevent

    init_gevent(*([] if wait_s is None else [wait_s]))

    env = Environment()
    pool = ClientPool(env)
    received: list[tuple[str, str, int]] = []
    lags: list[float] = []

    def read(c: GrpcClient, call: Any, sub_id: str) -> None:
        for d, now in c.deliveries(call):
            received.append((d.notification.pub_id, d.sub_id or sub_id, now))

    def probe() -> None:
        while True:
            asked = time.monotonic()
            gevent.sleep(0.1)
            lags.append((time.monotonic() - asked - 0.1) * 1000)

    calls = []
    for k in range(streams):
        c = pool.get(address) if channels == "pool" else GrpcClient(address, env)
        call, _ = c.subscribe(f"s{k}", f"sub{k}", Filter.parse(f'symbol = "S{k}"'))
        calls.append(call)
        gevent.spawn(read, c, call, f"s{k}")
    gevent.spawn(probe)
    (out.parent / "ready").write_text("")
    cpu0 = time.process_time()
    gevent.sleep(seconds)
    cpu = time.process_time() - cpu0
    out.write_text(json.dumps({"received": received, "cpu_s": cpu, "lag_ms": lags}))
    os._exit(0)


async def publish(address: str, streams: int, rate: float, seconds: float) -> int:
    from scotbed.broker.client import BrokerClient

    n = int(rate * seconds)
    async with BrokerClient(address) as pub:
        start = time.perf_counter()
        for k in range(n):
            await asyncio.sleep(max(0.0, start + k / rate - time.perf_counter()))
            await pub.publish([(f"p{k}", {"symbol": f"S{k % streams}", "price": 1.0})])
    return n


def stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"mean": statistics.fmean(xs), "p50": xs[len(xs) // 2], "p99": xs[int(len(xs) * 0.99)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=500)
    ap.add_argument("--rate", type=float, default=100.0, help="notifications per second")
    ap.add_argument("--seconds", type=float, default=20.0, help="how long the publisher sends")
    ap.add_argument("--channels", choices=("pool", "user"), default="pool")
    ap.add_argument(
        "--grpc-wait-s",
        type=float,
        default=None,
        help="how often a blocked call wakes (default: the users' GEVENT_WAIT_S; gRPC's own is 0.1)",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--client", nargs=2, metavar=("ADDRESS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client:
        client(
            args.client[0],
            args.streams,
            args.channels,
            args.grpc_wait_s,
            Path(args.client[1]),
            args.seconds + 5,
        )
        return
    print(json.dumps(run(args), indent=1) if args.json else report(run(args)))


def run(args: argparse.Namespace) -> dict[str, Any]:
    from scotbed import topology
    from scotbed.broker.eventlog import read_events
    from scotbed.broker.fleet import flush_all, wait_quiescent
    from scotbed.broker.launcher import LocalCluster

    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalCluster.from_topology(topology.tree(topology.path(1)), tmp, routing="flooding") as cluster,
    ):
        (bid,) = cluster.addresses()
        address = cluster.addresses()[bid]
        out = Path(tmp) / "client.json"
        proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--streams",
                str(args.streams),
                "--channels",
                args.channels,
                "--seconds",
                str(args.seconds),
                *([] if args.grpc_wait_s is None else ["--grpc-wait-s", str(args.grpc_wait_s)]),
                "--client",
                address,
                str(out),
            ]
        )
        while not (Path(tmp) / "ready").exists():
            if proc.poll() is not None:
                raise SystemExit(f"the client process exited with {proc.returncode}")
            time.sleep(0.1)
        asyncio.run(wait_quiescent({bid: address}, timeout_s=30))
        n = asyncio.run(publish(address, args.streams, args.rate, args.seconds))
        proc.wait()
        asyncio.run(flush_all({bid: address}))
        delivered = {
            (e["pub_id"], e["sub_id"]): e["ts_ns"]
            for e in read_events(cluster.event_log(bid))
            if e["ev"] == "deliver"
        }
        got = json.loads(out.read_text())
    waits = [(now - delivered[(p, s)]) / 1e6 for p, s, now in got["received"]]
    return {
        "streams": args.streams,
        "channels": args.channels,
        "grpc_wait_s": args.grpc_wait_s,
        "published": n,
        "received": len(waits),
        "deliver_to_receive_ms": stats(waits),
        "client_loop_lag_ms": stats(got["lag_ms"]),
        "client_cpu_ms_per_delivery": got["cpu_s"] * 1000 / max(1, len(waits)),
        "load_average": os.getloadavg()[0],
    }


def report(r: dict[str, Any]) -> str:
    def line(what: str, f: dict[str, float]) -> str:
        return f"  {what:22s} mean {f['mean']:7.2f}  p50 {f['p50']:7.2f}  p99 {f['p99']:7.2f} ms"

    wait = "the users' waits" if r["grpc_wait_s"] is None else f"waits of {r['grpc_wait_s']:g} s"
    head = f"{r['streams']} streams, channels per {r['channels']}, {wait}"
    return "\n".join(
        [
            f"{head}: {r['received']} of {r['published']} received",
            line("deliver → receive", r["deliver_to_receive_ms"]),
            line("client loop lateness", r["client_loop_lag_ms"]),
            f"  client CPU per delivery {r['client_cpu_ms_per_delivery']:.3f} ms"
            f" (load average {r['load_average']:.2f})",
        ]
    )


if __name__ == "__main__":
    main()
