"""``scotbed campaign CAMPAIGN.yaml``: a matrix of runs and one aggregate report, implemented in
:mod:`scotbed.orchestrator.campaign` (which provides ``main(args) -> int``)."""

from __future__ import annotations

import argparse
from typing import Any

from scotbed.orchestrator.commands import call_lazy
from scotbed.orchestrator.commands.run import add_run_options


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("campaign", help="run a matrix of experiments, compare them")
    p.add_argument("campaign", metavar="CAMPAIGN", help="campaign file (YAML)")
    p.add_argument("--backend", choices=("local", "compose", "k8s"), help="override every run's backend")
    p.add_argument("--out", default="runs", metavar="DIR", help="parent of the campaign directory")
    add_run_options(p)
    p.set_defaults(handler=lambda args: call_lazy("campaign", "scotbed.orchestrator.campaign", args))
