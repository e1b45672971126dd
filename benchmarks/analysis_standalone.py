"""`scotbed analyze` of one synthesised run on a Spark standalone cluster against ``local[*]``.

    .venv/bin/python benchmarks/analysis_standalone.py --events 10000000 --repeat 3 [--workdir DIR]

Synthesises a contract-format run of about N events (as ``analysis_scale.py`` does; ``--workdir DIR``
keeps it for a later call), starts a standalone cluster of ``--workers`` one-core workers on this host
(:mod:`scotbed.analysis.standalone`) and times ``scotbed analyze RUN --spark-master M`` from nothing (a
process of its own: the JVM's start, the analysis, the stop), alternating ``local[*]`` and the cluster,
``--repeat`` times each. Both share the host's cores, so the cluster can be no faster; the check is that
no step waits on the driver: the cluster's time stays within 1.5× of ``local[*]``'s. Prints one JSON
line per analysis and a last line with the mean ratio and each side's times. Each summary must say
the run is correct (the synthesised run is correct by construction).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from analysis_scale import spec_for

from scotbed.analysis.standalone import local_cluster
from scotbed.analysis.synth import synthesise

TARGET_RATIO = 1.5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--worker-memory", default="2g")
    ap.add_argument("--workdir", type=Path, default=None, help="keep the run here and reuse it")
    args = ap.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="scotbed-standalone-"))
    run = workdir / f"run-{args.events}"
    if not (run / "topology.json").exists():
        synthesise(run, spec_for(args.events))
    times: dict[str, list[float]] = {"local": [], "standalone": []}
    with local_cluster(workdir / "daemons", args.workers, args.worker_memory) as cluster:
        for k in range(args.repeat):
            for side, master in (("local", "local[*]"), ("standalone", cluster.url)):
                got = analyze(run, master, workdir / f"out-{side}-{k}")
                times[side].append(got["wall_s"])
                print(json.dumps({"side": side, "repeat": k + 1, **got}), flush=True)
    ratios = [s / loc for s, loc in zip(times["standalone"], times["local"], strict=True)]
    print(
        json.dumps(
            {
                "events_asked": args.events,
                "workers": args.workers,
                "ratio_mean": round(statistics.mean(ratios), 3),
                "ratios": [round(r, 3) for r in ratios],
                "within_target": max(ratios) <= TARGET_RATIO,
                **{f"{side}_s": [round(t, 1) for t in ts] for side, ts in times.items()},
            }
        )
    )


def analyze(run: Path, master: str, out: Path) -> dict[str, Any]:
    """``scotbed analyze`` from nothing: its wall time, the load average before it and what it found."""
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    command = ["analyze", str(run), "--spark-master", master, "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "scotbed.orchestrator.cli", *command],
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"analyze on {master} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    summary = json.loads((out / "analysis" / "summary.json").read_text())
    env = summary["environment"]
    return {
        "wall_s": round(wall, 2),
        "analysis_s": env["analysis_s"],
        "load_before": round(load, 2),
        "ok": summary["correctness"]["ok"],
        "events": summary["events"]["total"],
        "master": env["spark_master"],
    }


if __name__ == "__main__":
    main()
