"""``scotbed render --target compose``: a run's compose project written to files, to start by hand
(``--standalone``: with a Locust master and worker that play the workload, no scotbed needed)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from scotbed.orchestrator.plan import deployed_configs
from scotbed.orchestrator.render import compose as compose_render
from scotbed.orchestrator.render import write_compose, write_topology_json


def write_files(args: Any, spec: Any, scot: Any, run_id: str, out: Path) -> int:
    """Write ``topology.json`` and the compose project (or the standalone one) into ``out``; the exit code."""
    if args.standalone:
        from scotbed.orchestrator.render.compose_standalone import write_standalone

        path = write_standalone(spec, scot, out, args.spec, os.path.relpath(Path.cwd(), out))
        print(f"wrote {path} and {out / 'compose' / spec.name}/; start with: docker compose -f {path} up")
        return 0
    write_topology_json(out, scot)
    user = args.user
    if user is None and hasattr(os, "getuid"):
        user = f"{os.getuid()}:{os.getgid()}"
    configs = deployed_configs(spec, scot, compose_render.addressing(), run_id)
    doc = compose_render.render_compose(configs, run_id, image=args.image, user=user)
    path = write_compose(out, doc, configs)
    print(f"wrote {len(doc['services'])} services to {path} (with brokers.json and events/)")
    print(f"start with: docker compose -f {path} -p {run_id.lower()} up -d")
    return 0
