"""A compose file for one run, as a dict (writing it is :mod:`scotbed.orchestrator.render`).

One service per broker (service name = hostname = broker id) on the run's own
bridge network; ``brokers.json`` is bind-mounted read-only next to the
compose file and every broker writes its event log into one bind-mounted
folder, so the run directory collects the logs without a copy step. Resource
limits are given both as ``deploy.resources.limits`` (compose v2) and
``cpus``/``mem_limit`` (docker-compose v1), with equal values so both accept
them. The file carries no ``version:`` key (the compose specification).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scotbed import contract
from scotbed.broker import metrics
from scotbed.config import BrokerConfig
from scotbed.orchestrator.images import BROKER_IMAGE
from scotbed.orchestrator.plan import Addressing

DEFAULT_PORT = 50051
CONFIG_PATH = "/etc/scotbed/brokers.json"
EVENTS_DIR = "/var/log/scotbed"
NETWORK = "overlay"


@dataclass(frozen=True)
class Limits:
    cpus: float = 1.0
    memory: str = "512M"  # same string in mem_limit and deploy.resources.limits.memory


def addressing(port: int = DEFAULT_PORT) -> Addressing:
    """Brokers as the containers see them: service-name addresses, logs in the events folder."""
    return Addressing(
        dial=f"{{id}}:{port}",
        listen=f"0.0.0.0:{port}",
        log_path=f"{EVENTS_DIR}/{{id}}.jsonl",
        metrics_port=metrics.PORT,
    )


def _service(
    cfg: BrokerConfig,
    run_id: str,
    image: str,
    port: int,
    limits: Limits,
    config_file: str,
    events_dir: str,
    user: str | None,
) -> dict[str, Any]:
    svc: dict[str, Any] = {
        "image": image,
        "hostname": cfg.id,
        # Arguments only: the image's ENTRYPOINT is the contract (docs/design.md §7).
        "command": ["--config", CONFIG_PATH, "--ready-file", contract.BROKER_READY_FILE, "--id", cfg.id],
        "environment": {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"},
        "labels": {
            "scotbed.io/run-id": run_id,
            "scotbed.io/broker": cfg.id,
            "scotbed.io/cluster": str(cfg.cluster),
            "scotbed.io/region": cfg.region,
        },
        "networks": [NETWORK],
        "volumes": [f"{config_file}:{CONFIG_PATH}:ro", f"{events_dir}:{EVENTS_DIR}"],
        # The probe reads the file the broker keeps while its health service says SERVING: a probe that
        # started a Python gRPC client in each of 18 containers every few seconds took a large share of
        # a 2-core host from the brokers it was checking, for the whole run.
        "healthcheck": {
            "test": ["CMD", "cat", contract.BROKER_READY_FILE],
            "interval": "5s",  # each probe is still an exec in the container: not more often
            "timeout": "5s",
            "retries": 18,
            "start_period": "5s",
        },
        "read_only": True,
        "tmpfs": ["/tmp"],
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "restart": "no",
        "cpus": limits.cpus,
        "mem_limit": limits.memory,
        "deploy": {"resources": {"limits": {"cpus": str(limits.cpus), "memory": limits.memory}}},
    }
    if user is not None:
        svc["user"] = user
    if cfg.prometheus_port is not None:  # reached on the run's network at <service>:<port>/metrics
        svc["expose"] = [str(cfg.prometheus_port)]
    return svc


def render_compose(
    configs: list[BrokerConfig],
    run_id: str,
    *,
    image: str = BROKER_IMAGE,
    port: int = DEFAULT_PORT,
    limits: Limits = Limits(),
    config_file: str = "./brokers.json",
    events_dir: str = "./events",
    user: str | None = None,
    extra_services: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The compose document of ``configs`` (rendered with :func:`addressing`). ``config_file`` and
    ``events_dir`` are host paths, relative to the compose file's folder; ``user`` ("uid:gid") makes
    the event logs belong to the caller on Linux; ``extra_services`` (e.g. Locust) join the same
    network when they name none."""
    services = {
        c.id: _service(c, run_id, image, port, limits, config_file, events_dir, user) for c in configs
    }
    for name, svc in (extra_services or {}).items():
        services[name] = {"networks": [NETWORK], **svc}
    return {
        "services": services,
        "networks": {NETWORK: {"driver": "bridge", "labels": {"scotbed.io/run-id": run_id}}},
    }
