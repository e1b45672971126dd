"""``scotbed calibrate [SPEC] --out FILE``: a broker process's own cost on this host, for the sim
backend (``scotbed run SPEC --backend sim --calibration FILE``); implemented in
:mod:`scotbed.orchestrator.calibrate`."""

from __future__ import annotations

import argparse
from typing import Any

from scotbed.orchestrator.backends.sim.calibration import DEFAULT_REPETITIONS
from scotbed.orchestrator.commands import add_spec_arguments, call_lazy, count_of
from scotbed.orchestrator.commands.run import add_output_options

DEFAULT_SPEC = "experiments/quickstart.yaml"


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "calibrate",
        help="measure what a broker process adds to the time model on this host (for --backend sim)",
    )
    add_spec_arguments(p, default=DEFAULT_SPEC)
    p.add_argument("--out", default="sim-calibration.json", metavar="FILE", help="the calibration file")
    p.add_argument("--runs", default="runs", metavar="DIR", help="parent of the calibration run's directory")
    p.add_argument(
        "--repetitions",
        type=count_of("runs"),
        default=DEFAULT_REPETITIONS,
        metavar="N",
        help=f"runs of SPEC; the calibration is their median (default {DEFAULT_REPETITIONS})",
    )
    add_output_options(p, spark=False)
    p.set_defaults(handler=lambda args: call_lazy("calibrate", "scotbed.orchestrator.calibrate", args))
