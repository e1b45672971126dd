"""``scotbed down [RUN_ID]``: tear down what a run left behind, implemented in
:mod:`scotbed.orchestrator.down` (which provides ``main(args) -> int``)."""

from __future__ import annotations

import argparse
from typing import Any

from scotbed.orchestrator.backends import REGISTRY
from scotbed.orchestrator.commands import call_lazy


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "down", help="remove the processes, containers or namespaces earlier runs left"
    )
    p.add_argument("run_id", nargs="?", metavar="RUN_ID", help="default: every run scotbed recorded")
    p.add_argument(
        "--backend",
        choices=tuple(REGISTRY),
        help="only runs of this backend (k8s also sweeps namespaces labelled managed-by=scotbed)",
    )
    p.set_defaults(handler=lambda args: call_lazy("down", "scotbed.orchestrator.down", args))
