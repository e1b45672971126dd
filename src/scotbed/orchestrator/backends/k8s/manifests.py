"""``scotbed render --target k8s``: the objects a k8s run applies, written to files without a cluster.

``k8s.yaml`` holds the brokers, ``workload.yaml`` the Locust Jobs, each as the backend applies it
(:func:`scotbed.orchestrator.backends.k8s.jobs.as_applied`); a scripted workload is played from the
orchestrator's host, so it has no Jobs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.orchestrator.backends.base import BackendError
from scotbed.orchestrator.backends.k8s import render as k8s_render
from scotbed.orchestrator.backends.k8s.jobs import as_applied
from scotbed.orchestrator.plan import deployed_configs, workload_plan
from scotbed.orchestrator.render import write_topology_json, write_yaml_documents


def write_manifests(args: Any, spec: Any, scot: Any, run_id: str, out: Path) -> int:
    """Write ``topology.json``, ``k8s.yaml`` and ``workload.yaml`` into ``out``; the exit code."""
    if args.standalone:
        raise BackendError("--standalone is for --target compose")
    write_topology_json(out, scot)
    if args.nodes is not None:
        if args.nodes < 1:
            raise BackendError(f"--nodes: {args.nodes} is not allowed; give the number of nodes (>= 1)")
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
