"""``scotbed render SPEC --target k8s|compose --out DIR``: write the manifests of a run without deploying."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.experiment.spec import Spec, build_scot
from scotbed.orchestrator.commands import CommandError, add_spec_arguments, load
from scotbed.orchestrator.commands.run import add_namespace_option, add_workers_option, cpu_quantity
from scotbed.orchestrator.images import BROKER_IMAGE, WORKLOAD_IMAGE
from scotbed.orchestrator.plan import deployed_configs, make_run_id, workload_plan
from scotbed.orchestrator.render import compose as compose_render
from scotbed.orchestrator.render import k8s as k8s_render
from scotbed.orchestrator.render import write_compose, write_yaml_documents


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("render", help="write Kubernetes manifests or a compose file")
    add_spec_arguments(p)
    p.add_argument("--target", required=True, choices=("k8s", "compose"))
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
    out = Path(args.out)
    if args.standalone:
        if args.target != "compose":
            raise CommandError("--standalone is for --target compose")
        from scotbed.orchestrator.render.compose_standalone import write_standalone

        path = write_standalone(spec, scot, out, args.spec, os.path.relpath(Path.cwd(), out))
        print(f"wrote {path} and {out / 'compose' / spec.name}/; start with: docker compose -f {path} up")
        return 0
    (out / contract.TOPOLOGY).parent.mkdir(parents=True, exist_ok=True)
    (out / contract.TOPOLOGY).write_text(json.dumps(scot.to_json(), indent=1) + "\n")
    if args.target == "k8s":
        return _render_k8s(args, spec, scot, run_id, out)
    user = args.user
    if user is None and hasattr(os, "getuid"):
        user = f"{os.getuid()}:{os.getgid()}"
    configs = deployed_configs(spec, scot, compose_render.addressing(), run_id)
    doc = compose_render.render_compose(configs, run_id, image=args.image, user=user)
    path = write_compose(out, doc, configs)
    print(f"wrote {len(doc['services'])} services to {path} (with brokers.json and events/)")
    print(f"start with: docker compose -f {path} -p {run_id.lower()} up -d")
    return 0


def _render_k8s(args: argparse.Namespace, spec: Spec, scot: Any, run_id: str, out: Path) -> int:
    """``k8s.yaml`` (the brokers) and ``workload.yaml`` (the Locust Jobs), each as the k8s backend
    applies it (:func:`scotbed.orchestrator.backends.k8s_jobs.as_applied`); a scripted workload is
    played from the orchestrator's host, so it has no Jobs."""
    from scotbed.orchestrator.backends.k8s_jobs import as_applied

    if args.nodes is not None:
        if args.nodes < 1:
            raise CommandError(f"--nodes: {args.nodes} is not allowed; give the number of nodes (>= 1)")
        warning = k8s_render.anti_affinity_warning(
            scot.chromatic_need(), args.nodes, args.preferred_anti_affinity
        )
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    ns = k8s_render.namespace_for(run_id, args.namespace_prefix)
    addressing = k8s_render.addressing(ns)
    objects = k8s_render.render_k8s(
        deployed_configs(spec, scot, addressing, run_id),
        run_id,
        image=args.image,
        namespace=ns,
        preferred_anti_affinity=args.preferred_anti_affinity,
        resources=k8s_render.Resources(cpu_request=args.pod_cpu) if args.pod_cpu else k8s_render.Resources(),
    )
    path = write_yaml_documents(out / contract.K8S_OBJECTS, objects)
    print(f"wrote {len(objects)} objects ({len(scot.brokers)} broker pods) to {path}")
    print(f"namespace {ns}; apply with: kubectl apply -f {path}")
    if spec.workload.script is not None:
        return 0
    plan = workload_plan(
        spec,
        scot,
        addressing.of(addressing.dial, scot),
        run_id=run_id,
        release_mode=k8s_render.WORKLOAD_RELEASE,
    )
    jobs = k8s_render.locust_jobs(plan, run_id, args.workload_image, args.workers, args.pod_cpu)
    workload = write_yaml_documents(
        out / contract.K8S_WORKLOAD_OBJECTS, as_applied(jobs, ns, spec.timeouts.run_s)
    )
    print(f"wrote the workload's {len(jobs)} objects to {workload}; apply it once every broker pod is Ready")
    return 0
