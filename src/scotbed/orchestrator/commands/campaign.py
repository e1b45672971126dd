"""``scotbed campaign CAMPAIGN.yaml``: a matrix of runs and one aggregate report, implemented in
:mod:`scotbed.orchestrator.campaign_command` (which provides ``main(args) -> int``)."""

from __future__ import annotations

import argparse
from typing import Any

from scotbed.orchestrator.backends import REGISTRY
from scotbed.orchestrator.commands import call_lazy
from scotbed.orchestrator.commands.run import add_run_options


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("campaign", help="run a matrix of experiments, compare them")
    p.add_argument("campaign", metavar="CAMPAIGN", help="campaign file (YAML)")
    p.add_argument("--backend", choices=tuple(REGISTRY), help="override every run's backend")
    p.add_argument("--out", default="runs", metavar="DIR", help="parent of the campaign directory")
    p.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override a spec value in every cell (after the campaign file's set:); repeatable",
    )
    p.add_argument(
        "--exclude-host-bound",
        action="store_true",
        help="leave runs whose validity verdict is host-bound out of the statistics (the report counts them)",
    )
    add_run_options(p)
    p.set_defaults(handler=lambda args: call_lazy("campaign", "scotbed.orchestrator.campaign_command", args))
