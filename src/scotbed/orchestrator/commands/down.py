"""``scotbed down [RUN_ID]``: tear down what a run left behind, implemented in
:mod:`scotbed.orchestrator.down` (which provides ``main(args) -> int``)."""

from __future__ import annotations

import argparse
from typing import Any

from scotbed.orchestrator.commands import call_lazy


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("down", help="remove the containers or namespaces of a run")
    p.add_argument("run_id", nargs="?", metavar="RUN_ID", help="default: every scotbed run on the backend")
    p.add_argument("--backend", choices=("compose", "k8s"), default="compose")
    p.set_defaults(handler=lambda args: call_lazy("down", "scotbed.orchestrator.down", args))
