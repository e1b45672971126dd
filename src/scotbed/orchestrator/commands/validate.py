"""``scotbed validate FILE``: every check `scotbed run` makes before it deploys
(:func:`scotbed.orchestrator.preflight.check`).

FILE is an experiment spec, or a campaign file (a mapping with a ``matrix``), whose every cell's
spec is checked the same way.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scotbed.experiment.spec import SpecError, dump_spec, load_spec
from scotbed.loader import read_document
from scotbed.orchestrator.backends import REGISTRY
from scotbed.orchestrator.commands import CommandError, add_spec_arguments, load
from scotbed.orchestrator.preflight import check


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "validate",
        help="check a spec or a campaign file (schema, routing vs overlay, placement, broker configs)",
    )
    add_spec_arguments(p)
    p.add_argument("--resolved", action="store_true", help="print the spec with every default filled in")
    p.add_argument(
        "--backend",
        choices=tuple(REGISTRY),
        help="check against this backend, as `run --backend` would (default: the spec's)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if _is_campaign(args.spec):
        return _campaign(args)
    checked = check(load(args), args.backend)
    spec = checked.spec
    if args.resolved:
        sys.stdout.write(dump_spec(spec))
        return 0
    if checked.scot is None:
        p = spec.topology.peers
        assert p is not None
        what = f"{p.n} peers, routing {spec.routing}, {checked.workload}"
        print(f"ok: {spec.name}: {what}, backend {checked.backend}")
        return 0
    s = checked.scot.summary()
    print(
        f"ok: {spec.name}: {s['kind']} {s['acyclic']} × K{s['connectivity']} ({s['brokers']} brokers), "
        f"routing {spec.routing}, matching {spec.matching}, {checked.workload}, backend {checked.backend}"
    )
    return 0


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
        check(load_spec(c.base, cell.sets), args.backend or c.backend)
    swept = ", ".join(f"{k} ({len(v)})" for k, v in c.matrix.items())
    print(
        f"ok: campaign {c.name}: {len(c.cells())} cells ({swept} × {c.repetitions} repetitions), "
        f"base {c.base}"
    )
    return 0
