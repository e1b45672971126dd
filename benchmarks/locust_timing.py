"""Send timing of the Locust workload on real brokers: the intended → sent gap and the HRP's rate.

    .venv/bin/python benchmarks/locust_timing.py [--workers 2] [--json]

Headless Locust (master + ``--workers``) against three brokers on loopback, the two workloads of
``tests/test_workloads_locust.py``: (1) 4 publishers at 750 publications/minute each, 60 each
(printed: median and max intended → sent gap, the goal a median under 5 ms); (2) a high-rate
publisher planned at 200/s for 400 notifications (printed: the realised rate, the goal within
±10 %). Both are timings, so they live here and not in the tests: on a host shared with other
work they measure the host as much as the workload (the tests assert the functional part: every
planned send happens, in planned order).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scotbed import topology as T
from scotbed.broker.launcher import LocalCluster
from scotbed.experiment.spec import parse_spec
from scotbed.orchestrator import plan as deploy_plan
from scotbed.workloads import plan as P
from scotbed.workloads.runner import run_workload

SCOT = T.tree(T.path(3))
STEADY = {
    "subscribers": 40,
    "publishers": 4,
    "notifications_per_publisher": 60,
    "rate_per_minute": 750,
    "selectivity": 0.05,
    "drain_s": 1.5,
}
HRP_RATE_PER_S = 200.0
BURST = {
    "subscribers": 10,
    "publishers": 0,
    "drain_s": 1.0,
    "hrp": {
        "rate_per_minute": HRP_RATE_PER_S * 60,
        "notifications": 400,
        "start_s": 0.5,
        "interested_fraction": 0.2,
    },
}


def play(workload: Mapping[str, Any], addresses: Mapping[str, str], root: Path, workers: int) -> list[dict]:
    """Run ``workload`` (a spec's ``workload:`` block) as a run would; its client ``publish`` events."""
    spec = parse_spec(
        {
            "name": "bench",
            "seed": 3,
            "routing": "flooding",
            "topology": {"kind": "tree"},
            "workload": dict(workload),
        }
    )
    plan = deploy_plan.workload_plan(spec, SCOT, addresses, run_id="bench")
    P.write(plan, root / "plan.json")
    result = run_workload(root / "plan.json", root, workers=workers, timeout_s=300)
    if result.status["phase"] != "done":
        raise RuntimeError(f"workload ended in phase {result.status['phase']}")
    events = [
        json.loads(line)
        for f in sorted((root / "events").glob("locust-*.jsonl"))
        for line in f.read_text().splitlines()
    ]
    return [e for e in events if e["ev"] == "publish"]


def gaps(pubs: list[dict]) -> dict[str, float]:
    ms = [(e["sent_ns"] - e["intended_ns"]) / 1e6 for e in pubs]
    return {
        "publications": len(ms),
        "median_gap_ms": round(statistics.median(ms), 3),
        "max_gap_ms": round(max(ms), 3),
    }


def rate(pubs: list[dict]) -> dict[str, float]:
    sent = sorted(e["sent_ns"] for e in pubs)
    realised = (len(sent) - 1) / ((sent[-1] - sent[0]) / 1e9)
    return {
        "notifications": len(sent),
        "rate_per_s": round(realised, 1),
        "planned_per_s": HRP_RATE_PER_S,
        "off_by": round(realised / HRP_RATE_PER_S - 1, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalCluster.from_topology(SCOT, Path(tmp) / "b", routing="rpf") as c,
    ):
        (Path(tmp) / "steady").mkdir()
        (Path(tmp) / "burst").mkdir()
        steady = gaps(play(STEADY, c.addresses(), Path(tmp) / "steady", args.workers))
        burst = rate(play(BURST, c.addresses(), Path(tmp) / "burst", args.workers))
    if args.json:
        print(json.dumps({"steady": steady, "hrp": burst}))
    else:
        print(
            f"intended->sent gap at 50 publications/s: median {steady['median_gap_ms']} ms "
            f"(goal < 5), max {steady['max_gap_ms']} ms"
        )
        print(
            f"HRP: {burst['notifications']} notifications at {burst['rate_per_s']}/s "
            f"(planned {HRP_RATE_PER_S}/s, goal ±10 %)"
        )


if __name__ == "__main__":
    main()
