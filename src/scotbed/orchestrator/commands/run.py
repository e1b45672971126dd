"""``scotbed run SPEC``: the whole run lifecycle, implemented in :mod:`scotbed.orchestrator.run`
(which provides ``main(args) -> int``)."""

from __future__ import annotations

import argparse
from typing import Any

from scotbed.orchestrator.commands import add_spec_arguments, call_lazy


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "run", help="deploy, drive, collect and analyse one experiment; exit 0 only if correct"
    )
    add_spec_arguments(p)
    p.add_argument("--backend", choices=("local", "compose", "k8s"), help="override the spec's backend")
    p.add_argument("--out", default="runs", metavar="DIR", help="parent of the run directory")
    p.set_defaults(handler=lambda args: call_lazy("run", "scotbed.orchestrator.run", args))
