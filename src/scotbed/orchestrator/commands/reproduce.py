"""``scotbed reproduce [NAME...] [--quick]``: the papers' headline experiments and the table of paper vs
measured effects, implemented in :mod:`scotbed.orchestrator.reproduce.runner`."""

from __future__ import annotations

import argparse
from typing import Any

from scotbed.orchestrator.commands import call_lazy
from scotbed.orchestrator.commands.run import add_output_options, add_workers_option


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "reproduce", help="re-run each paper's headline experiment; table of paper vs measured effects"
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="rows to run (default: every built row)")
    p.add_argument("--quick", action="store_true", help="a small scale with one repetition (for tests)")
    p.add_argument("--out", default="runs/reproduce", metavar="DIR", help="where the runs go (resumable)")
    p.add_argument(
        "--doc",
        default="docs/reproduction.md",
        metavar="FILE",
        help="the table to write; the rows' records go into reproduction/ beside it "
        "(default: docs/reproduction.md)",
    )
    p.add_argument(
        "--repetitions", type=int, metavar="N", help="repetitions of every row (default: the row's own)"
    )
    p.add_argument(
        "--table-only", action="store_true", help="run nothing: write the table from the rows' records alone"
    )
    add_workers_option(p)
    add_output_options(p)
    p.set_defaults(
        handler=lambda args: call_lazy("reproduce", "scotbed.orchestrator.reproduce.runner", args),
        backend=None,
    )
