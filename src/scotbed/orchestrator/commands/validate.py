"""``scotbed validate SPEC``: schema and semantic checks, including everything a deployment derives."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scotbed.orchestrator import spec_peers
from scotbed.orchestrator.commands import add_spec_arguments, load
from scotbed.orchestrator.plan import broker_configs, client_plan, workload_plan
from scotbed.orchestrator.spec import Spec, build_scot, dump_spec


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "validate", help="check a spec (schema, routing vs overlay, placement, broker configs)"
    )
    add_spec_arguments(p)
    p.add_argument("--resolved", action="store_true", help="print the spec with every default filled in")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    spec = load(args)
    if spec.topology.kind == spec_peers.PEERS:
        return _peers(spec, args.resolved)
    scot = build_scot(spec)
    # the placeholder addresses exercise every per-broker check the real backends hit
    placeholder = {b.id: f"{b.id}:1" for b in scot.brokers}
    broker_configs(spec, scot, placeholder)
    if spec.workload.script is not None:
        from scotbed.orchestrator.scripted import load_script

        workload = load_script(spec, scot).summary()
    else:
        plan = client_plan(spec, scot)
        workload_plan(spec, scot, placeholder)  # generates the subscriptions: catches what only data shows
        hrp = ", 1 HRP" if plan.hrp else ""
        workload = f"{len(plan.subscribers)} subscribers, {len(plan.publishers)} publishers{hrp}"
    if args.resolved:
        sys.stdout.write(dump_spec(spec))
        return 0
    s = scot.summary()
    print(
        f"ok: {spec.name}: {s['kind']} {s['acyclic']} × K{s['connectivity']} ({s['brokers']} brokers), "
        f"routing {spec.routing}, matching {spec.matching}, {workload}, backend {spec.backend}"
    )
    return 0


def _peers(spec: Spec, resolved: bool) -> int:
    """A peers spec has no overlay to build: its checks are the schema's and spec_peers'."""
    if resolved:
        sys.stdout.write(dump_spec(spec))
        return 0
    p, w = spec.topology.peers, spec.workload.peers or spec_peers.PeersWorkloadSpec()
    assert p is not None
    print(
        f"ok: {spec.name}: {p.n} peers, routing {spec.routing}, {w.subscriptions} subscriptions, "
        f"{w.events} events, backend {spec.backend}"
    )
    return 0
