"""A compose file that runs a whole experiment by itself: the brokers plus a Locust master and worker.

``scotbed render SPEC --target compose --standalone --out .`` writes the
repository's top-level ``docker-compose.yml`` with this module, for someone
who has never run scotbed: ``docker compose up`` builds one image (the broker
image with the ``workloads`` extra, from broker-image/Dockerfile), starts the
brokers, and once all are healthy the Locust master plays the workload plan
and exits with its worker. Publishers are released by the master itself
(``release.mode: auto``: every subscription acknowledged and every broker
quiescent), since no orchestrator is there to do it.

Everything the containers read (broker configs, workload plan, locustfile,
topology) is rendered into ``compose/<spec name>/`` next to the compose file
and mounted read-only; the results (a run directory: ``events/``,
``workload/``, ``locust/``) go to the named volume ``results``, which is
created from the image's ``/var/log/scotbed`` and so belongs to its non-root
user without any host-side preparation. Pure, apart from :func:`write_standalone`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed import topology as topo
from scotbed.config import BrokerConfig
from scotbed.experiment.spec import Spec, SpecError
from scotbed.orchestrator import plan as deploy_plan
from scotbed.orchestrator.render import compose as render
from scotbed.orchestrator.render import to_yaml, write_brokers_json
from scotbed.workloads import plan as wplan
from scotbed.workloads.entry import LOCUSTFILE, PLAN_ENV, RUN_DIR_ENV

IMAGE = "scotbed-workloads:0.1.0"
MASTER_PORT = 5557
WORKLOAD_DIR = "/etc/scotbed-workload"
RESULTS = "results"  # the named volume, mounted at render.EVENTS_DIR in every container


def run_id_of(spec: Spec) -> str:
    """A fixed run id, so the committed file only changes when the experiment does."""
    return f"{spec.name}-compose"


def data_dir_of(spec: Spec) -> str:
    return f"compose/{spec.name}"


def _build(context: str) -> dict[str, Any]:
    """The image's build section; the base image and the wheelhouse switch come from the caller's
    environment, so an offline host can build it too (see broker-image/README.md)."""
    return {
        "context": context,
        "dockerfile": "broker-image/Dockerfile",
        "args": {
            "EXTRAS": "broker,workloads",
            "BASE_IMAGE": "${SCOTBED_BASE_IMAGE:-python:3.11-slim}",
            "WHEELHOUSE": "${SCOTBED_WHEELHOUSE:-0}",
        },
    }


def standalone_configs(spec: Spec, scot: topo.Scot, run_id: str) -> list[BrokerConfig]:
    """The brokers' configs with their event logs in ``events/`` of the results volume, where the
    Locust processes write theirs, so the volume holds one run directory."""
    logs = f"{render.EVENTS_DIR}/{contract.events_file('{id}')}"
    addressing = dataclasses.replace(render.addressing(), log_path=logs)
    return deploy_plan.deployed_configs(spec, scot, addressing, run_id)


def standalone_plan(spec: Spec, scot: topo.Scot, run_id: str) -> wplan.Plan:
    """The workload plan with service-name broker addresses; the master releases the publishers."""
    if spec.workload.script is not None:
        raise SpecError(
            "workload.script: a scripted workload is played from the host by `scotbed run`; "
            "a standalone compose file carries a generated (Locust) workload"
        )
    addressing = render.addressing()
    addresses = addressing.of(addressing.dial, scot)
    plan: wplan.Plan = deploy_plan.workload_plan(spec, scot, addresses, run_id=run_id, release_mode="auto")
    return plan


def _locust(args: list[str], data_dir: str, context: str) -> dict[str, Any]:
    return {
        "image": IMAGE,
        "build": _build(context),
        "entrypoint": ["python", "-m", "locust", "-f", f"{WORKLOAD_DIR}/locustfile.py"],
        "command": args,
        "environment": {
            PLAN_ENV: f"{WORKLOAD_DIR}/plan.json",
            RUN_DIR_ENV: render.EVENTS_DIR,
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        },
        "volumes": [f"./{data_dir}:{WORKLOAD_DIR}:ro", f"{RESULTS}:{render.EVENTS_DIR}"],
        "healthcheck": {"disable": True},  # the image's check is the broker's
        "read_only": True,
        "tmpfs": ["/tmp"],
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "restart": "no",
    }


def render_standalone(spec: Spec, scot: topo.Scot, context: str = ".") -> dict[str, Any]:
    """The compose document: brokers, ``locust-master`` (exits when the workload is over) and
    ``locust-worker``. ``context`` is the repository root relative to the compose file."""
    run_id, data_dir = run_id_of(spec), data_dir_of(spec)
    plan = standalone_plan(spec, scot, run_id)
    users = len(plan.subscribers) + len(plan.publishers)
    master_args = [
        "--headless", "--master", "--master-bind-port", str(MASTER_PORT), "--expect-workers", "1",
        "--expect-workers-max-wait", "300", "-u", str(users), "-r", str(max(users, 1)),
        "--run-time", f"{int(plan.timeout_s)}s", "--stop-timeout", "5", "--only-summary",
        "--csv", f"{render.EVENTS_DIR}/locust/locust", "--html", f"{render.EVENTS_DIR}/locust/report.html",
    ]  # fmt: skip
    worker_args = ["--worker", "--master-host", "locust-master", "--master-port", str(MASTER_PORT)]
    master = _locust(master_args, data_dir, context)
    master["depends_on"] = {b.id: {"condition": "service_healthy"} for b in scot.brokers}
    worker = _locust(worker_args, data_dir, context)
    worker["depends_on"] = {"locust-master": {"condition": "service_started"}}
    doc = render.render_compose(
        standalone_configs(spec, scot, run_id),
        run_id,
        image=IMAGE,
        config_file=f"./{data_dir}/brokers.json",
        events_dir=RESULTS,
        extra_services={"locust-master": master, "locust-worker": worker},
    )
    for svc in doc["services"].values():
        svc["build"] = _build(context)  # every service may come first; compose builds the image once
    doc["volumes"] = {RESULTS: {"labels": {"scotbed.io/run-id": run_id}}}
    return doc


def header(spec: Spec, spec_path: str, brokers: int) -> str:
    name = spec.name
    factor = getattr(spec.topology.acyclic, "kind", "custom")
    return f"""\
# A ready scotbed experiment: {brokers} brokers ({factor} x K{spec.topology.connectivity}, {spec.routing})
# and a Locust master + worker that play the {name} workload and exit.
# Generated by `scotbed render {spec_path} --target compose --standalone --out .`
# (tests/test_compose_backend.py keeps it in sync); edit the spec, not this file.
#
#   docker compose up --exit-code-from locust-master     # or docker-compose (v1)
#
# The first `up` builds scotbed-workloads:0.1.0 from broker-image/Dockerfile (needs PyPI and
# python:3.11-slim; offline: SCOTBED_BASE_IMAGE=scotbed-base:bookworm SCOTBED_WHEELHOUSE=1 after
# `make base-image wheelhouse EXTRAS=broker,workloads`). Results (events/, workload/, locust/) are in
# the volume `results`: docker cp "$(docker compose ps -aq locust-master)":/var/log/scotbed runs/{name}
# Then `docker compose down -v`. Broker configs, plan and topology: compose/{name}/.
"""


def write_standalone(
    spec: Spec, scot: topo.Scot, out: str | Path, spec_path: str, context: str = "."
) -> Path:
    """``docker-compose.yml`` in ``out`` and its mounted files in ``out/compose/<name>/``."""
    out = Path(out)
    data = out / data_dir_of(spec)
    data.mkdir(parents=True, exist_ok=True)
    run_id = run_id_of(spec)
    write_brokers_json(data / "brokers.json", standalone_configs(spec, scot, run_id))
    wplan.write(standalone_plan(spec, scot, run_id), data / "plan.json")
    (data / "locustfile.py").write_text(LOCUSTFILE)
    (data / "topology.json").write_text(json.dumps(scot.to_json(), indent=1) + "\n")
    path = out / "docker-compose.yml"
    doc = render_standalone(spec, scot, context)
    path.write_text(header(spec, spec_path, len(scot.brokers)) + to_yaml(doc))
    return path
