"""How the sim backend's cost grows: simulated messages per second and wall time by size.

    python benchmarks/sim_scale.py [--subscribers 1000] [--notifications 10 20 40]
                                   [--publishers 100] [--analyse] [--event-loop] [--json]

Runs ``experiments/octopis-static.yaml`` (paper-fig8 × K5: 75 brokers, SNR) on ``--backend sim`` at
the paper's rate (60/min per publisher, time_scale 1) with ``--subscribers`` subscribers and
``--publishers`` publishers × each of ``--notifications``, and prints per size: the messages the
brokers served (``*_in`` events), the deliveries, the wall time of the whole run (plan, simulation,
logs; with ``--analyse`` the analysis too), messages per second, µs per message, and the peak RSS
of the process that ran it. The last line checks that the cost grows about linearly with the
messages: µs per message at the largest size over µs per message at the smallest (1.0 = linear).

``--event-loop`` also times the event loop alone (:class:`~scotbed.orchestrator.backends.sim.clock.Clock`,
a ``heapq``) against simpy's (if installed) on the same pattern: chains of timed callbacks, each
scheduling the next.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.broker.eventlog import read_events

REPO = Path(__file__).resolve().parent.parent
SPEC = REPO / "experiments" / "octopis-static.yaml"
SERVED = (contract.NOTIF_IN, contract.SUB_IN, contract.UNSUB_IN)


def one_size(subscribers: int, publishers: int, notifications: int, analyse: bool) -> dict[str, Any]:
    """One run in a child process (its own peak RSS), timed from outside."""
    sets = [
        f"workload.subscribers={subscribers}",
        f"workload.publishers={publishers}",
        f"workload.notifications_per_publisher={notifications}",
        "workload.rate_per_minute=60",
        "workload.time_scale=1",
    ]
    with tempfile.TemporaryDirectory(prefix="sim-scale-") as tmp:
        code = (
            "import json, resource, sys; from pathlib import Path;"
            "from scotbed.orchestrator.run import RunOptions, run_spec;"
            f"r = run_spec(Path({str(SPEC)!r}), {sets!r}, RunOptions(backend='sim', out=Path({tmp!r}),"
            f" quiet=True, analyse={analyse}));"
            "print(json.dumps({'run_dir': str(r.run_dir), 'ok': r.ok,"
            " 'rss_kb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))"
        )
        env = {**os.environ, "SCOTBED_STATE_DIR": str(Path(tmp) / "state")}
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        wall = time.perf_counter() - t0
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        served = deliveries = 0
        for path in (Path(out["run_dir"]) / contract.EVENTS_DIR).glob("*.jsonl"):
            for e in read_events(path):
                served += e["ev"] in SERVED
                deliveries += e["ev"] == contract.DELIVER
    return {
        "subscribers": subscribers,
        "publications": publishers * notifications,
        "messages": served,
        "deliveries": deliveries,
        "wall_s": round(wall, 2),
        "messages_per_s": round(served / wall),
        "us_per_message": round(wall / served * 1e6, 1),
        "rss_mb": round(out["rss_kb"] / 1024),
        "ok": out["ok"],
    }


def event_loop(callbacks: int = 1_000_000, chains: int = 100) -> dict[str, float]:
    """Callbacks per second of the sim's heapq loop and of simpy's, ``chains`` chains in parallel."""
    from scotbed.orchestrator.backends.sim.clock import Clock

    clock = Clock(start_ns=0)
    per_chain = callbacks // chains

    def step(k: int, left: int) -> None:
        if left:
            clock.after(1000 + k, step, k, left - 1)

    for k in range(chains):
        clock.at(k, step, k, per_chain)
    t0 = time.perf_counter()
    clock.run()
    out = {"heapq_per_s": round(callbacks / (time.perf_counter() - t0))}
    try:
        import simpy  # type: ignore[import-not-found]
    except ImportError:
        return out
    env = simpy.Environment()

    def chain(k: int) -> Any:
        for _ in range(per_chain):
            yield env.timeout(1000 + k)

    for k in range(chains):
        env.process(chain(k))
    t0 = time.perf_counter()
    env.run()
    out["simpy_per_s"] = round(callbacks / (time.perf_counter() - t0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subscribers", type=int, nargs="+", default=[1000])
    ap.add_argument("--publishers", type=int, default=100)
    ap.add_argument("--notifications", type=int, nargs="+", default=[10, 20, 40])
    ap.add_argument("--analyse", action="store_true", help="time the analysis too")
    ap.add_argument("--event-loop", action="store_true", help="also time the event loop alone vs simpy")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = [
        one_size(s, args.publishers, n, args.analyse) for s in args.subscribers for n in args.notifications
    ]
    result: dict[str, Any] = {"load_1min": round(os.getloadavg()[0], 2), "sizes": rows}
    smallest, largest = rows[0], rows[-1]
    result["cost_growth"] = round(largest["us_per_message"] / smallest["us_per_message"], 2)
    if args.event_loop:
        result["event_loop"] = event_loop()
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"sim backend, {SPEC.name} (75 brokers, SNR), load average {result['load_1min']}")
    for r in rows:
        print(
            f"  {r['subscribers']:>6} subs {r['publications']:>7} pubs: {r['messages']:>9} messages "
            f"{r['deliveries']:>9} deliveries in {r['wall_s']:>7.1f} s = {r['messages_per_s']:>7} msg/s "
            f"({r['us_per_message']:.0f} µs/msg), RSS {r['rss_mb']} MB"
        )
    print(f"  µs per message, largest size over smallest: {result['cost_growth']} (1.0 = linear)")
    if "event_loop" in result:
        print(f"  event loop alone: {result['event_loop']}")


if __name__ == "__main__":
    main()
