"""Peers on Kubernetes: every peer process in its own pod of the broker image (one namespace per run),
driven from the host exactly as on the local backend.

The peers dial each other by DNS name on the headless Service ``peers`` (:mod:`.render_peers`);
the driver (:class:`~scotbed.vinifera.process.cluster.PeerCluster`) reaches each one through an in-process
port-forward, as the orchestrator reaches brokers. Waiting for Ready, the forwards, copying the event
logs and container logs out and deleting the namespace are the broker deployment's
(:class:`.deployment.K8sDeployment`, for pods labelled ``component=peer``). The namespace and context go
into the run state before anything is created, so ``scotbed down`` removes a run whose driver died.
A peer failure deletes its pod with grace 0, after its event log was copied out (an emptyDir dies
with its pod).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from scotbed import contract
from scotbed.orchestrator.backends.base import BackendError, DeployRequest
from scotbed.orchestrator.backends.k8s import render_peers as render
from scotbed.orchestrator.backends.k8s.api import api_message, apply, schedulable_nodes
from scotbed.orchestrator.backends.k8s.deployment import MANAGED_BY, MANAGER, K8sDeployment, run_namespace
from scotbed.orchestrator.backends.k8s.render import anti_affinity_warning
from scotbed.orchestrator.render import write_yaml_documents
from scotbed.orchestrator.state import RunState
from scotbed.vinifera.process.launch import PeerPlace

if TYPE_CHECKING:
    from scotbed.orchestrator.backends.k8s.backend import K8sBackend


class PeerPods(K8sDeployment):
    """The peer pods of one run: the broker deployment's waits, forwards, collection and teardown."""

    component = render.COMPONENT

    @property
    def client_addresses(self) -> dict[str, str]:
        ns, port = self.namespace, self.port
        return {p: render.peer_address(contract.peer_name(p), ns, port) for p in self.brokers}


class K8sPeerLauncher:
    """A :class:`~scotbed.vinifera.process.launch.Launcher` that runs each peer in a pod; ``backend``
    holds the run's k8s options (context, namespace prefix, anti-affinity, resources, placement, port)."""

    def __init__(
        self, backend: K8sBackend, run_id: str, image: str, state: RunState, ready_timeout_s: float
    ) -> None:
        self.backend, self.run_id, self.image, self.state = backend, run_id, image, state
        self.ready_timeout_s = ready_timeout_s
        self.namespace = run_namespace(run_id, backend.namespace_prefix)
        self.names: list[int] = []
        self.pods: PeerPods | None = None
        self._workdir = Path()
        self._stopped = False

    def places(self, workdir: Path, names: Sequence[int]) -> dict[int, PeerPlace]:
        self._workdir, self.names = workdir, list(names)
        ns, port = self.namespace, self.backend.port
        return {
            n: PeerPlace(render.peer_address(n, ns, port), f"0.0.0.0:{port}", render.peer_log(n))
            for n in names
        }

    def start(self, workdir: Path, run_file: Path) -> dict[int, str]:
        b = self.backend
        kube = b.kube()
        try:
            nodes = schedulable_nodes(kube.core.list_node().items, b.placement)
        except Exception as e:
            raise BackendError(f"listing nodes of context {kube.context!r}: {api_message(e)}") from None
        need = len(self.names)
        preferred = b.preferred_anti_affinity and nodes < need
        warning = anti_affinity_warning(need, nodes, b.preferred_anti_affinity)
        if warning:
            b.warn(warning)
        objects = render.render_peers(
            self.names,
            run_file.read_text(),
            self.run_id,
            self.namespace,
            image=self.image,
            port=b.port,
            preferred_anti_affinity=preferred,
            resources=b.resources,
            placement=b.placement,
        )
        meta = objects[0]["metadata"]
        objects[0] = {**objects[0], "metadata": {**meta, "labels": {**meta["labels"], MANAGED_BY: MANAGER}}}
        write_yaml_documents(workdir / contract.MANIFESTS_DIR / contract.K8S_OBJECTS, objects)
        request = DeployRequest(self.run_id, workdir, [], self.ready_timeout_s, self.state, self.image)
        pods = [o["metadata"]["name"] for o in objects if o["kind"] == "Pod"]
        self.pods = PeerPods(kube, request, self.namespace, pods, b, [warning] if warning else [])
        self.state.k8s_namespace, self.state.k8s_context = self.namespace, kube.context
        self.state.save()
        for obj in objects:
            apply(kube, obj)
        b.notify(f"applied {len(objects)} objects in namespace {self.namespace}")
        self.pods.wait_ready(self.ready_timeout_s)
        self.pods.start_forwards()
        addresses = self.pods.admin_addresses
        return {n: addresses[contract.peer_node(n)] for n in self.names}

    def release(self) -> None:
        """Nothing to free: every pod owns its port."""

    def exited(self) -> dict[int, str]:
        if self.pods is None:
            return {}
        return {contract.peer_name(p): why for p, why in self.pods.dead().items()}

    def kill(self, name: int) -> None:
        """Copy the peer's event log out, then delete its pod with grace 0 (SIGKILL)."""
        assert self.pods is not None
        node = contract.peer_node(name)
        self.pods.collect(self._workdir / contract.EVENTS_DIR, only=[node])
        if self.pods.collect_problems:
            raise BackendError("; ".join(self.pods.collect_problems))
        self.pods.brokers.remove(node)
        try:
            self.pods.fault_target.kill(node)
        except RuntimeError as e:
            raise BackendError(str(e)) from None

    def stop(self) -> None:
        """Copy every live peer's event log and container log out, then delete the namespace (kept on
        failure with ``--keep``)."""
        if self.pods is None or self._stopped:
            return
        self._stopped = True
        try:
            self.pods.collect(self._workdir / contract.EVENTS_DIR)
        finally:
            if not self.backend.keep_on_failure:
                self.pods.teardown()


def launcher(
    backend: K8sBackend, run_id: str, image: str, state: RunState, ready_timeout_s: float
) -> K8sPeerLauncher:
    """The k8s backend's peer launcher (its ``peers``): one pod per peer, with ``backend``'s options."""
    return K8sPeerLauncher(backend, run_id, image, state, ready_timeout_s)
