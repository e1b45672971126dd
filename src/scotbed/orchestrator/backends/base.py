"""The seam between the run lifecycle and where brokers actually run.

A backend turns broker configs into running brokers and back into files:
``deploy`` starts them and returns a :class:`Deployment`, which knows the
addresses the orchestrator (admin, health) and the workload (clients) dial,
which brokers have died, how to copy event logs into the run directory, and
how to remove everything it started. Backends never import the lifecycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from scotbed.config import BrokerConfig
from scotbed.errors import ScotbedError
from scotbed.orchestrator.images import BROKER_IMAGE
from scotbed.orchestrator.plan import Addressing
from scotbed.orchestrator.state import RunState


class BackendError(ScotbedError, RuntimeError):
    """A backend could not do what the run asked; the message names the broker or resource."""


@dataclass
class DeployRequest:
    """Everything a backend deploys: it never sees the spec or the overlay."""

    run_id: str
    run_dir: Path
    configs: list[BrokerConfig]  # rendered with the backend's addressing (Backend.addressing)
    ready_timeout_s: float
    state: RunState
    image: str = BROKER_IMAGE
    options: dict[str, str] = field(default_factory=dict)
    nodes_needed: int = 1  # nodes that keep every broker off its neighbours' nodes (Scot.chromatic_need)


class Deployment(Protocol):
    @property
    def admin_addresses(self) -> dict[str, str]:
        """broker id -> host:port the orchestrator reaches (health, Admin)."""
        ...

    @property
    def client_addresses(self) -> dict[str, str]:
        """broker id -> host:port the workload's clients dial."""
        ...

    @property
    def metrics_addresses(self) -> dict[str, str]:
        """broker id -> host:port of its Prometheus endpoint, where the brokers run (loopback for local
        processes, the run's network for containers); empty unless the spec has metrics on."""
        ...

    def dead(self) -> dict[str, str]:
        """Brokers that stopped running, with the reason (exit code, last log lines)."""
        ...

    def collect(self, events_dir: Path) -> list[Path]:
        """Copy every broker's event log into ``events_dir`` (a no-op where logs already land there)."""
        ...

    def teardown(self) -> None:
        """Remove everything the deployment started; safe to call twice."""
        ...

    @property
    def in_cluster_workload(self) -> bool:
        """The workload runs next to the brokers (:meth:`run_workload_jobs`), not on the host."""
        ...

    def run_workload_jobs(self, objects: Sequence[dict[str, Any]], timeout_s: float) -> None:
        """Run the workload's rendered objects (Kubernetes Jobs) to their end and copy their results
        into the run directory; only where :attr:`in_cluster_workload`."""
        ...


class HostWorkload:
    """The workload side of a deployment whose clients run on the host (local processes, compose)."""

    @property
    def in_cluster_workload(self) -> bool:
        return False

    def run_workload_jobs(self, objects: Sequence[dict[str, Any]], timeout_s: float) -> None:
        raise BackendError("this backend runs the workload on the host, not as in-cluster Jobs")


class Backend(Protocol):
    name: str

    def addressing(self, run_id: str) -> Addressing:
        """How this backend's brokers dial, bind and log; the run renders the configs with it."""
        ...

    def deploy(self, request: DeployRequest) -> Deployment: ...
