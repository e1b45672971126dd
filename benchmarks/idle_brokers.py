"""What an idle broker costs the host: CPU per broker with nothing to route.

    .venv/bin/python benchmarks/idle_brokers.py [--seconds 15] [--json]

Starts the 18 brokers of the paper's Fig. 2 SCOT (k = 3) on loopback, waits until they are
ready, and reads each process's CPU time over a quiet interval, with the default log settings
(``queue``/``table``/``loop`` samples every 250 ms and the loop probe's 10 Hz timer) and with
sampling off. The baseline, measured in the same run: a bare asyncio loop woken 100 times a
second, which prices one timer wake-up on this host. On a small host a large overlay's idle
cost is the floor under every delay it reports (docs/host-bound.md).

It also prices one ``Admin.Status`` call (what the live progress line asks every broker once a
round, ``broker/statuspoll.py``): the brokers' CPU with a poller asking each of them every
``--status-interval`` s against without, alternated three times in one cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from typing import Any

import psutil

from scotbed import topology
from scotbed.broker.launcher import LocalCluster
from scotbed.broker.statuspoll import StatusPoller

SCOT = topology.Scot(topology.paper_fig2(), 3)
SETTLE_S = 4.0  # start-up work (imports, hellos, the first samples) is over by then


def idle_ms_per_s(log: dict[str, float], seconds: float) -> list[float]:
    """CPU milliseconds per second of each idle broker."""
    with (
        tempfile.TemporaryDirectory() as d,
        LocalCluster.from_topology(SCOT, d, routing="snr", matching="counting", log=log) as cluster,
    ):
        procs = [psutil.Process(b.proc.pid) for b in cluster.brokers.values() if b.proc]
        time.sleep(SETTLE_S)
        return cpu_ms_per_s(procs, seconds)


def cpu_ms_per_s(
    procs: list[psutil.Process], seconds: float, poller: StatusPoller | None = None
) -> list[float]:
    """Each process's CPU ms per second over ``seconds``, with ``poller`` (if any) asking meanwhile."""
    before = [sum(p.cpu_times()[:2]) for p in procs]
    start = time.monotonic()
    if poller is None:
        time.sleep(seconds)
    else:
        with poller:
            time.sleep(seconds)
    wall = time.monotonic() - start
    after = [sum(p.cpu_times()[:2]) for p in procs]
    return [(b - a) / wall * 1000.0 for a, b in zip(before, after, strict=True)]


def status_call_ms(seconds: float, interval_s: float, pairs: int = 3) -> list[float]:
    """CPU ms one Status call costs a broker: (polled - idle) / calls per second, per alternated pair."""
    with (
        tempfile.TemporaryDirectory() as d,
        LocalCluster.from_topology(SCOT, d, routing="snr", matching="counting") as cluster,
    ):
        procs = [psutil.Process(b.proc.pid) for b in cluster.brokers.values() if b.proc]
        addresses = {b: p.address for b, p in cluster.brokers.items()}
        time.sleep(SETTLE_S)
        costs = []
        for _ in range(pairs):
            idle = statistics.fmean(cpu_ms_per_s(procs, seconds))
            polled = statistics.fmean(cpu_ms_per_s(procs, seconds, StatusPoller(addresses, interval_s)))
            costs.append((polled - idle) * interval_s)
        return costs


def wakeup_us(seconds: float, per_s: int = 100) -> float:
    """CPU microseconds of one asyncio timer wake-up (a loop doing nothing else)."""

    async def run() -> float:
        async def tick() -> None:
            while True:
                await asyncio.sleep(1.0 / per_s)

        task = asyncio.create_task(tick())
        await asyncio.sleep(0.5)
        cpu, start = time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)
        used, wall = time.process_time() - cpu, time.monotonic() - start
        task.cancel()
        return used / (wall * per_s) * 1e6

    return asyncio.run(run())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument(
        "--status-interval", type=float, default=0.1, help="s between two Status calls to a broker"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    default = idle_ms_per_s({}, args.seconds)
    quiet = idle_ms_per_s({"sample_interval_ms": 0.0}, args.seconds)
    wake = wakeup_us(args.seconds / 2)
    status = status_call_ms(args.seconds / 2, args.status_interval)
    out: dict[str, Any] = {
        "brokers": len(default),
        "idle_ms_cpu_per_s_default": round(statistics.median(default), 2),
        "idle_ms_cpu_per_s_sampling_off": round(statistics.median(quiet), 2),
        # the mean too: a process's CPU time comes in 10 ms ticks, which the median of 18 keeps
        "idle_ms_cpu_per_s_default_mean": round(statistics.fmean(default), 2),
        "idle_ms_cpu_per_s_sampling_off_mean": round(statistics.fmean(quiet), 2),
        "asyncio_wakeup_us": round(wake, 1),
        "status_call_ms_cpu": [round(c, 3) for c in status],
    }
    out["default_in_wakeups_per_s"] = round(out["idle_ms_cpu_per_s_default"] * 1000.0 / wake, 1)
    if args.json:
        print(json.dumps(out))
        return
    print(f"{out['brokers']} idle brokers, CPU per broker (median, mean):")
    for what, key in (("default log settings", "default"), ("sampling off        ", "sampling_off")):
        median, mean = out[f"idle_ms_cpu_per_s_{key}"], out[f"idle_ms_cpu_per_s_{key}_mean"]
        print(f"  {what} : {median:6.2f} ms/s, {mean:6.2f} ms/s")
    print(f"  one asyncio wake-up  : {out['asyncio_wakeup_us']:6.1f} µs (baseline, same run)")
    print(f"  default = {out['default_in_wakeups_per_s']} wake-ups/s of a bare loop")
    calls = ", ".join(f"{c:.2f}" for c in out["status_call_ms_cpu"])
    print(f"  one Admin.Status call: {calls} ms of a broker's CPU (alternated pairs)")


if __name__ == "__main__":
    main()
