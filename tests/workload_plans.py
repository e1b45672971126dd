"""Workload plans built the way a run builds them: a spec's workload block, the orchestrator's
client placement, then :func:`scotbed.workloads.plan.build_plan` (one path, no test-only branch)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scotbed import topology as T
from scotbed.experiment.spec import parse_spec
from scotbed.orchestrator import plan as deploy_plan
from scotbed.workloads.plan import Plan


def plan_for(
    workload: Mapping[str, Any], scot: T.Scot, addresses: Mapping[str, str], seed: int = 0, run_id: str = ""
) -> Plan:
    """The plan of ``workload`` (a spec's ``workload:`` block) on ``scot``; ``flooding`` runs on any
    overlay, so the spec's routing never constrains the overlay a test picks."""
    topology = {"kind": "scot", "connectivity": scot.m} if scot.m > 1 else {"kind": "tree"}
    spec = parse_spec(
        {"name": "t", "seed": seed, "routing": "flooding", "topology": topology, "workload": dict(workload)}
    )
    return deploy_plan.workload_plan(spec, scot, addresses, run_id=run_id)
