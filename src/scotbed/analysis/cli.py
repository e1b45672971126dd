"""``scotbed analyze RUN_DIR``: (re)compute a run's analysis (also: a campaign directory's aggregate).

Exit status: 0 when the analysis ran and the correctness oracle held; 1 when the
oracle found missing, duplicate or false-positive deliveries, when a broker's event
log lost lines, or when correctness could not be checked (no workload files); 2 when
the run directory is unusable; 5 (``--require-valid`` only) when the run was correct
but host-bound.

Output: the correctness counts as one JSON line, the validity verdict and the
report's path on stdout, warnings on stderr; ``--quiet``: the report's path
alone; ``--log-json``: one ``result`` JSON line on stdout, warnings as JSON
lines on stderr. Spark's JVM writes to ``analysis/spark.log`` unless ``--verbose``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.analysis import unreadable
from scotbed.analysis.rundir import RunDirError
from scotbed.analysis.validity import HOST_BOUND, exit_status, line
from scotbed.terminal import Parser, emit_json, log_as_json

CORRECTNESS_KEYS = (
    "ok",
    "expected_deliveries",
    "delivered",
    "missing",
    "duplicates",
    "false_positives",
    "in_transition",
)


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="scotbed analyze",
        description="Compute a run's summary, curves and report (a campaign directory: its aggregate).",
    )
    p.add_argument("run_dir", help="a run directory (docs/design.md §5) or a campaign directory")
    p.add_argument("--spark-master", metavar="URL", help="Spark master URL (default: local[*])")
    p.add_argument(
        "--settle-ms",
        type=float,
        metavar="MS",
        help="oracle settle bound after (un)subscribe (default: the spec's analysis.settle_ms, else 0)",
    )
    p.add_argument("--engine", help="matching engine of the oracle: naive, counting, pst (default: counting)")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="write analysis/ and report.html here (default: into the run directory)",
    )
    p.add_argument(
        "--exclude-host-bound",
        action="store_true",
        help="a campaign directory: leave host-bound runs out of the statistics (the report counts them)",
    )
    p.add_argument(
        "--require-valid",
        action="store_true",
        help="exit 5 when the run is correct but host-bound (its delays measure the host, not the routing)",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--quiet", action="store_true", help="only warnings, errors and the report path")
    out.add_argument(
        "--verbose",
        action="store_true",
        help="also the output of Spark and its JVM (otherwise in the run's analysis/spark.log)",
    )
    out.add_argument(
        "--log-json", action="store_true", help="only JSON lines: the result on stdout, warnings on stderr"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.log_json:
        log_as_json()
    path = Path(args.run_dir)
    try:
        if (path / contract.CAMPAIGN_INDEX).is_file():
            from scotbed.analysis.campaign import CampaignDirError, aggregate

            if args.out:
                _warn(args, f"scotbed analyze: error: --out is for a run directory; {path} is a campaign's")
                return 2
            try:
                result = aggregate(path, exclude_host_bound=args.exclude_host_bound)
            except CampaignDirError as e:
                _warn(args, f"scotbed analyze: {e}", "error")
                return 2
            code = 0 if result["all_ok"] else 1
            _say(args, code, {"report": str(result["report"])}, f"campaign report: {result['report']}")
            return code
        from scotbed.analysis.api import analyze

        summary = analyze(
            path,
            args.spark_master,
            settle_ms=args.settle_ms,
            engine=args.engine,
            verbose=args.verbose,
            out=args.out,
        )
    except RunDirError as e:
        _warn(args, f"scotbed analyze: {e}", "error")
        return 2
    return _outcome(args, Path(args.out) if args.out else path, summary)


def _outcome(args: argparse.Namespace, out: Path, summary: dict[str, Any]) -> int:
    """Print what the analysis written to ``out`` found; the exit status."""
    c = summary["correctness"]
    if (note := unreadable.describe(summary)) is not None:
        _warn(args, f"scotbed analyze: warning: {note}")
    if c.get("ok") is not True:
        why = c.get("reason") or "the oracle found missing, duplicate or false-positive deliveries"
        checked = "NOT CHECKED" if c.get("ok") is None else "INCORRECT"
        _warn(args, f"scotbed analyze: correctness {checked}: {why}")
    validity = summary.get("validity")
    code = exit_status(0 if c.get("ok") is True else 1, validity, args.require_valid)
    counts = {k: c.get(k) for k in CORRECTNESS_KEYS}
    report = str(out / contract.REPORT)
    if args.log_json:
        verdict = {"verdict": validity.get("verdict"), "text": line(validity)} if validity else None
        _say(args, code, {"correctness": counts, "validity": verdict, "report": report}, "")
        return code
    if not args.quiet:
        print(json.dumps(counts))
    if validity and validity.get("verdict") == HOST_BOUND:
        _warn(args, f"scotbed analyze: warning: {line(validity)}")
    elif validity and not args.quiet:
        print(line(validity))
    print(report if args.quiet else f"report: {report}")
    return code


def _say(args: argparse.Namespace, code: int, fields: dict[str, Any], text: str) -> None:
    """The result: ``text`` on stdout, or with ``--log-json`` one ``result`` JSON line."""
    if args.log_json:
        emit_json(sys.stdout, event="result", exit_code=code, **fields)
    else:
        print(text)


def _warn(args: argparse.Namespace, text: str, event: str = "warning") -> None:
    if args.log_json:
        emit_json(event=event, text=text)
    else:
        print(text, file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
