"""``scotbed validate FILE``: schema and semantic checks, including everything a deployment derives.

FILE is an experiment spec, or a campaign file (a mapping with a ``matrix``), whose every cell's
spec is checked the same way.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scotbed.loader import read_document
from scotbed.orchestrator import spec_peers
from scotbed.orchestrator.commands import CommandError, add_spec_arguments, load
from scotbed.orchestrator.plan import broker_configs, client_plan, workload_plan
from scotbed.orchestrator.spec import Spec, SpecError, build_scot, dump_spec, load_spec


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "validate",
        help="check a spec or a campaign file (schema, routing vs overlay, placement, broker configs)",
    )
    add_spec_arguments(p)
    p.add_argument("--resolved", action="store_true", help="print the spec with every default filled in")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if _is_campaign(args.spec):
        return _campaign(args)
    spec = load(args)
    if spec.topology.kind == spec_peers.PEERS:
        return _peers(spec, args.resolved)
    workload = check(spec)
    if args.resolved:
        sys.stdout.write(dump_spec(spec))
        return 0
    s = build_scot(spec).summary()
    print(
        f"ok: {spec.name}: {s['kind']} {s['acyclic']} × K{s['connectivity']} ({s['brokers']} brokers), "
        f"routing {spec.routing}, matching {spec.matching}, {workload}, backend {spec.backend}"
    )
    return 0


def check(spec: Spec) -> str:
    """Every check a deployment of a broker-overlay spec makes; returns the workload in words."""
    if spec.topology.kind == spec_peers.PEERS:
        return "peers"
    scot = build_scot(spec)
    # the placeholder addresses exercise every per-broker check the real backends hit
    placeholder = {b.id: f"{b.id}:1" for b in scot.brokers}
    broker_configs(spec, scot, placeholder)
    if spec.workload.script is not None:
        from scotbed.orchestrator.scripted import load_script

        return str(load_script(spec, scot).summary())
    plan = client_plan(spec, scot)
    workload_plan(spec, scot, placeholder)  # generates the subscriptions: catches what only data shows
    hrp = ", 1 HRP" if plan.hrp else ""
    return f"{len(plan.subscribers)} subscribers, {len(plan.publishers)} publishers{hrp}"


def _is_campaign(path: str) -> bool:
    doc = read_document(path, "spec", SpecError, "yaml")
    return isinstance(doc, dict) and "matrix" in doc


def _campaign(args: argparse.Namespace) -> int:
    from scotbed.orchestrator.campaign import CampaignError, load_campaign

    try:
        c = load_campaign(args.spec, args.sets)
    except CampaignError as e:
        raise CommandError(str(e)) from None
    for cell in c.cells():
        check(load_spec(c.base, cell.sets))
    swept = ", ".join(f"{k} ({len(v)})" for k, v in c.matrix.items())
    print(
        f"ok: campaign {c.name}: {len(c.cells())} cells ({swept} × {c.repetitions} repetitions), "
        f"base {c.base}"
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
