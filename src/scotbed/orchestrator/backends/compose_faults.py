"""The fault timeline's hands on a compose deployment: a broker is its container.

``kill`` is ``compose kill`` (SIGKILL), ``stop`` is ``compose stop`` (SIGTERM,
then SIGKILL after the grace), ``restart`` is ``compose start`` of the same
container — same config and event-log bind mount, same service name, so the
neighbours redial it by DNS. Its host port is ephemeral and may change on
start, so the published ports are read again once the project is healthy.
Link faults (cut, restore, capacity, latency) go through the broker's Admin
RPC on its published port, as on local.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from scotbed.config import BrokerConfig
from scotbed.orchestrator.backends.docker_engine import DockerError

if TYPE_CHECKING:
    from scotbed.orchestrator.backends.compose import ComposeDeployment

STOP_GRACE_S = 10


class ComposeFaults:
    def __init__(
        self, deployment: ComposeDeployment, configs: list[BrokerConfig], ready_timeout_s: float
    ) -> None:
        self.deployment = deployment
        self.configs = configs
        self.ready_timeout_s = ready_timeout_s

    def _compose(self, *args: str) -> None:
        self.deployment.project.act(*args, timeout_s=self.ready_timeout_s)

    def kill(self, broker_id: str) -> None:
        self._compose("kill", "-s", "SIGKILL", broker_id)

    def terminate(self, broker_id: str) -> None:
        self._compose("stop", "-t", str(STOP_GRACE_S), broker_id)

    def start_broker(self, broker_id: str) -> None:
        self._compose("start", broker_id)
        self.deployment.revive(broker_id)

    def wait_ready(self, ids: Iterable[str] | None = None) -> None:
        """Every container healthy again (the restarted one included), then its new host port."""
        try:
            self.deployment.project.wait_healthy(self.ready_timeout_s)
        except DockerError as e:
            raise RuntimeError(str(e)) from None
        self.deployment.discover_ports()

    def address(self, broker_id: str) -> str:
        return self.deployment.admin_addresses[broker_id]
