"""``scotbed run SPEC``: the whole run lifecycle, implemented in :mod:`scotbed.orchestrator.run`
(which provides ``main(args) -> int``)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from scotbed.orchestrator.backends import REGISTRY
from scotbed.orchestrator.commands import add_spec_arguments, call_lazy, count_of
from scotbed.orchestrator.images import BROKER_IMAGE


def add_output_options(p: argparse.ArgumentParser, spark: bool = True) -> None:
    """How a command that runs something reports (one of --quiet, --verbose, --log-json); ``spark``:
    it starts Spark, whose JVM output --verbose shows."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quiet", action="store_true", help="only warnings, errors and the report path")
    if spark:
        g.add_argument(
            "--verbose",
            action="store_true",
            help="also the output of Spark and its JVM (otherwise in the run's analysis/spark.log)",
        )
    g.add_argument(
        "--log-json",
        action="store_true",
        help="only JSON lines: progress on stderr, the result on stdout (for CI and scripts)",
    )


def add_valid_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--require-valid",
        action="store_true",
        help="exit 5 when a run is correct but host-bound (its delays measure the host, not the routing)",
    )


def add_run_options(p: argparse.ArgumentParser, analysis: bool = True) -> None:
    """Options `run`, `campaign` and `saturate` share; ``analysis``: the runs are analysed (Spark)."""
    p.add_argument("--keep", action="store_true", help="leave the brokers running after the run")
    add_output_options(p, spark=analysis)
    add_workers_option(p)
    if analysis:
        add_valid_option(p)
        p.add_argument(
            "--spark-master", metavar="URL", help="Spark master for the analysis (default local[*])"
        )
    p.add_argument(
        "--calibration",
        type=Path,
        metavar="FILE",
        help="sim: add the host cost a `scotbed calibrate` FILE measured on broker processes "
        "(default: the time model alone)",
    )
    p.add_argument("--image", metavar="IMAGE", help=f"broker image (compose, k8s; default {BROKER_IMAGE})")
    p.add_argument(
        "--workload-image",
        metavar="IMAGE",
        help="k8s: image of the Locust Jobs (default scotbed-workloads:0.1.0; "
        "make image EXTRAS=broker,workloads IMAGE=scotbed-workloads:0.1.0)",
    )
    p.add_argument("--kube-context", metavar="NAME", help="Kubernetes context (k8s; default: current)")
    add_namespace_option(p)
    p.add_argument(
        "--preferred-anti-affinity",
        action="store_true",
        help="k8s: neighbours may share a node when the cluster has too few (warns)",
    )
    p.add_argument(
        "--pod-cpu",
        type=cpu_quantity,
        metavar="QTY",
        help="k8s: CPU request of every broker and Locust pod, e.g. 50m (default 100m per broker and "
        "500m per Locust pod, lowered to one request that fits when the cluster's free CPU is short)",
    )


def add_namespace_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--namespace-prefix",
        metavar="PREFIX",
        help="k8s: a run's namespace is PREFIX + its run id (default: scotbed-)",
    )


def add_workers_option(p: argparse.ArgumentParser) -> None:
    """``--workers N``: refused by the parser (exit 2) unless N >= 1, so no run deploys first."""
    p.add_argument(
        "--workers", type=count_of("worker processes"), default=2, metavar="N", help="Locust worker processes"
    )


def cpu_quantity(text: str) -> str:
    """A Kubernetes CPU quantity (``0.5``, ``250m``, ``2``)."""
    if not re.fullmatch(r"(\d+(\.\d+)?|\d+m)", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a CPU quantity (e.g. 50m, 0.5, 2)")
    return text


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "run", help="deploy, drive, collect and analyse one experiment; exit 0 only if correct"
    )
    add_spec_arguments(p)
    p.add_argument("--backend", choices=tuple(REGISTRY), help="override the spec's backend")
    p.add_argument("--out", default="runs", metavar="DIR", help="parent of the run directory")
    add_run_options(p)
    p.set_defaults(handler=lambda args: call_lazy("run", "scotbed.orchestrator.run", args))
