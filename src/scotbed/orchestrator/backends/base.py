"""The seam between the run lifecycle and where brokers actually run.

A backend turns broker configs into running brokers and back into files:
``deploy`` starts them and returns a :class:`Deployment`, which knows the
addresses the orchestrator (admin, health) and the workload (clients) dial,
which brokers have died, how to copy event logs into the run directory, and
how to remove everything it started. Backends never import the lifecycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from scotbed.config import BrokerConfig
from scotbed.orchestrator.state import RunState


class BackendError(RuntimeError):
    """A backend could not do what the run asked; the message names the broker or resource."""


@dataclass
class DeployRequest:
    run_id: str
    run_dir: Path
    configs: list[BrokerConfig]  # addresses are placeholders the backend fills in
    ready_timeout_s: float
    state: RunState
    image: str = "scotbed-broker:0.1.0"
    options: dict[str, str] = field(default_factory=dict)


class Deployment(Protocol):
    @property
    def admin_addresses(self) -> dict[str, str]:
        """broker id -> host:port the orchestrator reaches (health, Admin)."""
        ...

    @property
    def client_addresses(self) -> dict[str, str]:
        """broker id -> host:port the workload's clients dial."""
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


class Backend(Protocol):
    name: str

    def deploy(self, request: DeployRequest) -> Deployment: ...
