"""Analysis throughput: synthesise contract-format event logs of N events and time the full analysis.

    .venv/bin/python benchmarks/analysis_scale.py --events 1000000 10000000 [--master local[*]]

Prints one line per size: events, synthesis seconds, analysis seconds, events/s and
the oracle verdict (the synthesised run is correct by construction, so ``ok`` must be
true). The analysis is the same job ``scotbed analyze`` runs; pass ``--master`` to run
it on a Spark cluster (the run directory must then be on a shared filesystem).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from scotbed.analysis.synth import SynthSpec, synthesise


def spec_for(events: int) -> SynthSpec:
    """A 13-broker tree, 200 subscribers, sized by a pilot run's events per publication."""
    base = SynthSpec(brokers=2, fanout=3, subscribers=200, symbols=100, publishers=10, rate_per_s=2000.0)
    with tempfile.TemporaryDirectory() as tmp:
        pilot = synthesise(Path(tmp) / "pilot", SynthSpec(**{**base.__dict__, "publications": 2000}))
    per_pub = pilot["events"] / 2000
    return SynthSpec(**{**base.__dict__, "publications": max(100, int(events / per_pub))})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=float, nargs="+", default=[1e6])
    ap.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    ap.add_argument("--workdir", default=None, help="where to write the runs (default: a temp dir, removed)")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--keep", action="store_true", help="keep the synthesised runs")
    args = ap.parse_args()
    os.environ.setdefault("SCOTBED_SPARK_DRIVER_MEMORY", args.driver_memory)
    from scotbed.analysis.api import analyze
    from scotbed.analysis.session import get_session

    root = Path(args.workdir or tempfile.mkdtemp(prefix="scotbed-bench-"))
    spark = get_session(args.master, app_name="scotbed-analysis-scale")
    try:
        for n in args.events:
            run = root / f"bench-{int(n)}"
            shutil.rmtree(run, ignore_errors=True)
            t0 = time.monotonic()
            made = synthesise(run, spec_for(int(n)))
            t_synth = time.monotonic() - t0
            t0 = time.monotonic()
            summary = analyze(run, spark=spark)
            t_an = time.monotonic() - t0
            size = sum(f.stat().st_size for f in (run / "events").iterdir())
            print(
                json.dumps(
                    {
                        "events": made["events"],
                        "bytes": size,
                        "deliveries": made["deliveries"],
                        "synth_s": round(t_synth, 1),
                        "analysis_s": round(t_an, 1),
                        "events_per_s": round(made["events"] / t_an),
                        "ok": summary["correctness"]["ok"],
                        "master": spark.sparkContext.master,
                        "cores": os.cpu_count(),
                    }
                ),
                flush=True,
            )
            if not args.keep:
                shutil.rmtree(run, ignore_errors=True)
    finally:
        spark.stop()
        if not args.keep and args.workdir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
