"""``scotbed saturate SPEC --param KEY.PATH [--lo --hi]``: the maximum sustainable rate by bisection,
implemented in :mod:`scotbed.orchestrator.saturation` (which provides ``main(args) -> int``)."""

from __future__ import annotations

import argparse
from typing import Any

from scotbed.orchestrator.backends import REGISTRY
from scotbed.orchestrator.commands import add_spec_arguments, call_lazy
from scotbed.orchestrator.commands.run import add_run_options


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "saturate", help="find the highest sustainable rate of a spec by bisection over short runs"
    )
    add_spec_arguments(p)
    p.add_argument(
        "--param", default="workload.rate_per_minute", metavar="KEY.PATH", help="the rate to search"
    )
    p.add_argument("--lo", type=float, default=60.0, help="lower bound of the search")
    p.add_argument("--hi", type=float, default=6000.0, help="upper bound of the search")
    p.add_argument("--tolerance", type=float, default=0.1, help="stop when hi - lo <= tolerance * lo")
    p.add_argument("--max-probes", type=int, default=8, help="most runs per search")
    p.add_argument(
        "--versus",
        action="append",
        metavar="KEY.PATH=VALUE",
        help="also search with this override (e.g. routing=flooding) and report the ratio; repeatable",
    )
    p.add_argument("--backend", choices=tuple(REGISTRY), help="override the spec's backend")
    p.add_argument("--out", default="runs", metavar="DIR", help="parent of the saturation directory")
    add_run_options(p, analysis=False)
    p.set_defaults(handler=lambda args: call_lazy("saturate", "scotbed.orchestrator.saturation", args))
