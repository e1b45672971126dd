"""``scotbed render SPEC --target k8s|compose --out DIR``: write the manifests of a run without deploying.

What a target writes is its backend's (``render`` of the backend class, for those declaring ``renders``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from scotbed.experiment.spec import build_scot
from scotbed.orchestrator.backends import REGISTRY, backend_class, rendering
from scotbed.orchestrator.backends.base import BackendError
from scotbed.orchestrator.commands import CommandError, add_spec_arguments, load
from scotbed.orchestrator.commands.run import add_namespace_option, add_workers_option, cpu_quantity
from scotbed.orchestrator.images import BROKER_IMAGE, WORKLOAD_IMAGE
from scotbed.orchestrator.plan import make_run_id


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("render", help="write Kubernetes manifests or a compose file")
    add_spec_arguments(p)
    p.add_argument("--target", required=True, choices=tuple(REGISTRY))
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created)")
    p.add_argument("--image", default=BROKER_IMAGE, help="broker image (default: %(default)s)")
    p.add_argument("--run-id", help="run id for names and labels (default: a new <name>-<UTC time>-<hex>)")
    p.add_argument(
        "--preferred-anti-affinity",
        action="store_true",
        help="k8s: keep neighbours apart only where the scheduler can (fewer nodes than the chromatic need)",
    )
    p.add_argument("--nodes", type=int, metavar="N", help="k8s: schedulable nodes, to warn when too few")
    p.add_argument(
        "--workload-image",
        default=WORKLOAD_IMAGE,
        metavar="IMAGE",
        help="k8s: image of the Locust Jobs (default: %(default)s)",
    )
    add_workers_option(p)
    add_namespace_option(p)
    p.add_argument(
        "--pod-cpu",
        type=cpu_quantity,
        metavar="QTY",
        help="k8s: CPU request of every broker and Locust pod, as `run --pod-cpu` sets it",
    )
    p.add_argument("--user", metavar="UID:GID", help="compose: container user (default: the caller's)")
    p.add_argument(
        "--standalone",
        action="store_true",
        help="compose: with a Locust master and worker that play the workload, no scotbed needed "
        "(build context: the current folder, so run it from the repository root)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    spec = load(args)
    scot = build_scot(spec)
    run_id = args.run_id or make_run_id(spec.name)
    backend = backend_class(args.target)
    if not backend.renders:
        raise CommandError(
            f"--target: {args.target} deploys nothing to render; choose {' or '.join(rendering())}"
        )
    try:
        return backend.render(args, spec, scot, run_id, Path(args.out))
    except BackendError as e:
        raise CommandError(str(e)) from None
