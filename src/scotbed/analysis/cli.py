"""``scotbed analyze RUN_DIR [--spark-master URL]`` (also: a campaign directory).

Exit status: 0 when the analysis ran and the correctness oracle held, 1 when
the oracle found missing, duplicate or false-positive deliveries, when a broker's
event log lost lines, or when correctness could not be checked (no workload
files), 2 when the run directory is unusable.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scotbed import contract
from scotbed.analysis import unreadable
from scotbed.analysis.rundir import RunDirError


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="scotbed analyze", description=__doc__.splitlines()[0])
    p.add_argument("run_dir", help="a run directory (DESIGN §5), or a campaign directory holding runs/*/")
    p.add_argument("--spark-master", default=None, help="Spark master URL (default: local[*])")
    p.add_argument(
        "--settle-ms", type=float, default=None, help="oracle settle bound after (un)subscribe (ms)"
    )
    p.add_argument("--engine", default=None, help="matching engine of the oracle (naive, counting, pst)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    path = Path(args.run_dir)
    try:
        if (path / "runs").is_dir() and not (path / contract.EVENTS_DIR).is_dir():
            from scotbed.analysis.campaign import aggregate

            result = aggregate(path)
            print(f"campaign report: {result['report']}")
            return 0 if result.get("all_ok") is not False else 1
        from scotbed.analysis.api import analyze

        summary = analyze(path, args.spark_master, settle_ms=args.settle_ms, engine=args.engine)
    except RunDirError as e:
        print(f"scotbed analyze: {e}", file=sys.stderr)
        return 2
    c = summary["correctness"]
    if (note := unreadable.describe(summary)) is not None:
        print(f"scotbed analyze: warning: {note}", file=sys.stderr)
    if c.get("ok") is not True:
        why = c.get("reason") or "the oracle found missing, duplicate or false-positive deliveries"
        checked = "NOT CHECKED" if c.get("ok") is None else "INCORRECT"
        print(f"scotbed analyze: correctness {checked}: {why}", file=sys.stderr)
    print(
        json.dumps(
            {
                k: c.get(k)
                for k in (
                    "ok",
                    "expected_deliveries",
                    "delivered",
                    "missing",
                    "duplicates",
                    "false_positives",
                    "in_transition",
                )
            }
        )
    )
    print(f"report: {path / contract.REPORT}")
    return 0 if c.get("ok") is True else 1


if __name__ == "__main__":
    raise SystemExit(main())
