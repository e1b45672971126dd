"""The fault timeline's hands on a k8s deployment: a broker is its Pod.

``kill`` deletes the pod with grace 0 (the kubelet sends SIGKILL at once),
``stop`` deletes it with the pod's own grace (SIGTERM, the broker drains, then
SIGKILL after ``terminationGracePeriodSeconds``). Broker pods are bare Pods
with ``restartPolicy: Never`` (no controller would bring one back), so
``restart`` waits until the old pod object is gone and creates the same
rendered Pod again: same name, same ConfigMap, same hostname and subdomain, so
its DNS name ``<pod>.brokers.<namespace>.svc`` resolves to the new pod's
address and the neighbours, which open a fresh channel on every redial, find
it; the new process dials them with a new incarnation and they resend and
replay as on local. The orchestrator's port-forward opens a stream to the pod
*name* per connection, so Admin calls reach the new pod without a new forward.

Times: the Locust master releases the publishers itself (in the cluster), so
the timeline's clock starts when a broker first counts a client publication
(:class:`FromFirstPublication`), at most a poll (plus a port-forward round
trip) after the release.

Lost with a deleted pod: its emptyDir, so the old incarnation's event log
(only the new one's is collected; the oracle reads the clients' logs).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scotbed.broker import fleet
from scotbed.broker.server import CLIENT_PUB
from scotbed.config import BrokerConfig
from scotbed.orchestrator.backends.k8s.api import api_message, is_status
from scotbed.orchestrator.faults import Injector

if TYPE_CHECKING:
    from scotbed.orchestrator.backends.k8s.deployment import K8sDeployment

KILL_GRACE_S = 0
POLL_S = 0.1


class K8sFaults:
    def __init__(
        self,
        deployment: K8sDeployment,
        pods: dict[str, dict[str, Any]],
        configs: list[BrokerConfig],
        ready_timeout_s: float,
    ) -> None:
        self.deployment = deployment
        self.pods = pods  # broker id -> its rendered Pod, created again on restart
        self.configs = configs
        self.ready_timeout_s = ready_timeout_s

    def _delete(self, broker_id: str, grace_s: int | None) -> None:
        d = self.deployment
        try:
            d.kube.core.delete_namespaced_pod(broker_id, d.namespace, grace_period_seconds=grace_s)
        except Exception as e:
            if not is_status(e, 404):
                raise RuntimeError(f"deleting pod {broker_id}: {api_message(e)}") from None

    def kill(self, broker_id: str) -> None:
        self._delete(broker_id, KILL_GRACE_S)

    def terminate(self, broker_id: str) -> None:
        self._delete(broker_id, None)

    def _gone(self, broker_id: str) -> bool:
        d = self.deployment
        try:
            d.kube.core.read_namespaced_pod(broker_id, d.namespace)
        except Exception as e:
            if is_status(e, 404):
                return True
            raise RuntimeError(f"reading pod {broker_id}: {api_message(e)}") from None
        return False

    def start_broker(self, broker_id: str) -> None:
        """Create the broker's Pod again once the deleted one is gone (a name is not reused before)."""
        d, clock = self.deployment, self.deployment.backend.clock
        deadline = clock() + self.ready_timeout_s
        while not self._gone(broker_id):
            if clock() >= deadline:
                raise RuntimeError(f"pod {broker_id} still terminating after {self.ready_timeout_s:g} s")
            d.backend.sleep(min(d.backend.poll_s, 0.2))
        try:
            d.kube.core.create_namespaced_pod(d.namespace, self.pods[broker_id])
        except Exception as e:
            raise RuntimeError(f"creating pod {broker_id} again: {api_message(e)}") from None

    def wait_ready(self, ids: Iterable[str] | None = None) -> None:
        self.deployment.wait_ready(self.ready_timeout_s, only=None if ids is None else list(ids))

    def address(self, broker_id: str) -> str:
        return self.deployment.admin_addresses[broker_id]


class FromFirstPublication(Injector):
    """The timeline on k8s, where the Locust master releases the publishers itself: its clock starts
    when a broker first counts a client publication (``client_pub``), polled every :data:`POLL_S`."""

    def clock_origin(self) -> float | None:
        addresses = dict(self.deployment_addresses)
        while not self.stopping(POLL_S):
            try:
                replies = asyncio.run(fleet.status_all(addresses, timeout_s=POLL_S * 20))
            except Exception:  # a port-forward blip: ask again
                continue
            if any(r.counters.get(CLIENT_PUB, 0) > 0 for r in replies.values()):
                return time.monotonic()
        return None

    @property
    def deployment_addresses(self) -> dict[str, str]:
        return {c.id: self.cluster.address(c.id) for c in self.cluster.configs}


def inject(spec: Any, deployment: Any, run_dir: Path | None) -> Injector | None:
    """Start watching for the first publication now (before the workload Jobs); None without faults."""
    if not spec.faults or run_dir is None:
        return None
    injector = FromFirstPublication(list(spec.faults), deployment.fault_target, run_dir)
    injector.start()
    return injector
