"""``scotbed analyze RUN_DIR``: (re)compute a run's analysis, implemented in :mod:`scotbed.analysis.cli`.

The analysis owns its options (``main(argv) -> int`` with its own parser), so
this command passes its arguments through unparsed (:func:`run_argv`).
"""

from __future__ import annotations

import argparse
from typing import Any

from scotbed.orchestrator.commands import call_lazy


def add_parser(sub: Any) -> None:
    """Listed in ``scotbed --help``; ``scotbed analyze ...`` itself is dispatched to :func:`run_argv`."""
    p: argparse.ArgumentParser = sub.add_parser(
        "analyze", help="compute summary, curves and report of a run (scotbed analyze --help for options)"
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<name>-<time>-<hex>)")
    p.set_defaults(handler=lambda args: run_argv([args.run_dir]))


def run_argv(argv: list[str]) -> int:
    return call_lazy("analyze", "scotbed.analysis.cli", argv)
