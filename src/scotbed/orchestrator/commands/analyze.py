"""``scotbed analyze RUN_DIR``: (re)compute a run's analysis, implemented in :mod:`scotbed.analysis.cli`
(which provides ``main(args) -> int``)."""

from __future__ import annotations

import argparse
from typing import Any

from scotbed.orchestrator.commands import call_lazy


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("analyze", help="compute summary, curves and report of a run")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<name>-<time>-<hex>)")
    p.add_argument("--spark-master", metavar="URL", help="Spark master (default: local[*])")
    p.set_defaults(handler=lambda args: call_lazy("analyze", "scotbed.analysis.cli", args))
