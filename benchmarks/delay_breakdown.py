"""Where a run's notification delay goes: the client's send, broker visits, links, the subscriber.

    .venv/bin/python benchmarks/delay_breakdown.py RUN_DIR [--json]

Reads a finished run directory's event logs (brokers and Locust client processes, one host, one
clock) and splits every delivery's sent → receive time into stages, each printed as mean, p50 and
p90 in milliseconds:

- publish → first broker: the publisher's ``sent_ns`` → ``notif_in`` at the broker it published to;
- broker visit: ``notif_in`` → the first ``notif_out`` at the same broker (routing, matching, logging);
- link: ``notif_out`` at a broker → ``notif_in`` at the neighbour it was sent to (output queue, gRPC,
  the neighbour's input);
- first broker → deliver: ``notif_in`` at the first broker → ``deliver`` at the subscriber's broker;
- deliver → receive: the broker's ``deliver`` → the subscriber process's ``receive`` (the client
  stream and the subscriber's own loop).

It answers "is this run's delay the routing, the brokers' host or the clients?" for runs whose
validity verdict is host-bound. Local and compose runs only: Kubernetes nodes have their own clocks.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.broker.eventlog import read_events
from scotbed.orchestrator.backends.sim.calibration import NotificationTimes

STAGES = (
    ("publish_to_first_broker", "publish → first broker"),
    ("broker_visit", "broker visit, notif_in → notif_out"),
    ("link", "link, notif_out → neighbour's notif_in"),
    ("first_broker_to_deliver", "first broker → deliver"),
    ("deliver_to_receive", "deliver → subscriber's receive"),
)


def stages(brokers: Iterable[dict[str, Any]], clients: Iterable[dict[str, Any]]) -> dict[str, list[int]]:
    """Nanoseconds per stage (keys of :data:`STAGES`), one value per notification, visit, hop or delivery."""
    t = NotificationTimes.of(brokers, clients)
    arrived, sent, delivered = t.arrived, t.outs, t.delivered
    first_in = {p: ts for p, (ts, _) in t.first_in.items()}
    published = {p: sent_ns for p, (sent_ns, _) in t.published.items()}
    received = t.received
    return {
        "publish_to_first_broker": [first_in[p] - t for p, t in published.items() if p in first_in],
        "broker_visit": [min(t for t, _ in outs) - arrived[k] for k, outs in sent.items() if k in arrived],
        "link": [
            arrived[(link, p)] - t
            for (_, p), outs in sent.items()
            for t, link in outs
            if (link, p) in arrived
        ],
        "first_broker_to_deliver": [t - first_in[p] for (p, _), t in delivered.items() if p in first_in],
        "deliver_to_receive": [t - delivered[k] for k, t in received.items() if k in delivered],
    }


def summary(ns: list[int]) -> dict[str, float]:
    if not ns:
        return {"n": 0}
    ms = sorted(x / 1e6 for x in ns)
    return {
        "n": len(ms),
        "mean_ms": round(statistics.fmean(ms), 3),
        "p50_ms": round(ms[len(ms) // 2], 3),
        "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 3),
    }


def read_run(run_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The run's broker events and client-process events."""
    brokers: list[dict[str, Any]] = []
    clients: list[dict[str, Any]] = []
    for path in sorted((run_dir / contract.EVENTS_DIR).glob("*.jsonl*")):
        into = clients if path.name.startswith(contract.CLIENT_PROCESS_PREFIX) else brokers
        into.extend(read_events(path))
    return brokers, clients


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not (args.run_dir / contract.EVENTS_DIR).is_dir():
        ap.error(f"{args.run_dir}: no {contract.EVENTS_DIR}/ directory (not a run directory?)")
    out = {k: summary(v) for k, v in stages(*read_run(args.run_dir)).items()}
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"delay by stage, {args.run_dir}")
    for key, what in STAGES:
        s = out[key]
        if not s["n"]:
            print(f"  {what:40s} no events")
            continue
        print(
            f"  {what:40s} mean {s['mean_ms']:8.2f}  p50 {s['p50_ms']:8.2f}  p90 {s['p90_ms']:8.2f} ms"
            f"  (n={s['n']})"
        )


if __name__ == "__main__":
    main()
