"""Kubernetes backend: one namespace per run, one Pod per broker, Locust as Jobs.

``deploy`` renders the run with :mod:`scotbed.orchestrator.backends.k8s.render`
(never re-rendering anything here), records the namespace and context in the
run state before creating anything, applies the objects in order and waits
for every broker pod to be Ready (:class:`~.deployment.K8sDeployment`). A failed wait names every
pod that is not Ready with the reason the API gives (scheduler message and anti-affinity
hint, image pull error with the image name, crash with the last log lines)
and deletes the namespace unless ``keep_on_failure``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.broker import tls
from scotbed.orchestrator.backends.base import BackendDefaults, BackendError, DeployRequest
from scotbed.orchestrator.backends.k8s.api import (
    Kube,
    api_message,
    apply,
    connect,
    schedulable_nodes,
)
from scotbed.orchestrator.backends.k8s.cpu_fit import fitted_request, free_millicores, millicores
from scotbed.orchestrator.backends.k8s.deployment import (
    MANAGED_BY,
    MANAGER,
    K8sDeployment,
    down_all,
    run_namespace,
)
from scotbed.orchestrator.backends.k8s.placement import ANYWHERE, Placement
from scotbed.orchestrator.backends.k8s.render import (
    DEFAULT_PORT,
    Resources,
    addressing,
    anti_affinity_warning,
    render_k8s,
)
from scotbed.orchestrator.plan import Addressing
from scotbed.orchestrator.render import write_yaml_documents
from scotbed.orchestrator.state import RunState
from scotbed.workloads.k8s import LOCUST_CPU_REQUEST

log = logging.getLogger(__name__)


def changes_only(notify: Callable[[str], None]) -> Callable[[str], None]:
    """``notify`` for a poll loop's status: a text equal to the last one passed on is dropped, so a wait
    of minutes prints a line per change (``3/18 broker pods Ready``), not one per poll."""
    last: list[str | None] = [None]

    def note(text: str) -> None:
        if text != last[0]:
            last[0] = text
            notify(text)

    return note


class K8sBackend(BackendDefaults):
    """``deploy`` for :class:`~scotbed.orchestrator.backends.base.Backend`: the request's configs were
    rendered with :meth:`addressing` (DNS names in the run's namespace, logs in the events emptyDir).
    ``scotbed down`` sweeps its namespaces only when asked (``--backend k8s``): that needs a cluster."""

    renders = True
    peers = "scotbed.orchestrator.backends.k8s.peers:launcher"

    @classmethod
    def render(cls, args: Any, spec: Any, scot: Any, run_id: str, out: Path) -> int:
        from scotbed.orchestrator.backends.k8s.manifests import write_manifests

        return write_manifests(args, spec, scot, run_id, out)

    @classmethod
    def down_run(cls, state: RunState) -> list[str]:
        if not state.k8s_namespace:
            return []
        return [f"namespace {n}: deleted" for n in down_all(state.k8s_context, state.run_id)]

    @classmethod
    def sweep(cls, run_id: str | None) -> list[str]:
        return [f"namespace {n}: deleted" for n in down_all(None, run_id)]

    @classmethod
    def from_options(cls, options: Any, progress: Any) -> K8sBackend:
        from scotbed.orchestrator.backends.k8s.render import Resources

        return cls(
            context=options.kube_context,
            namespace_prefix=options.namespace_prefix,
            preferred_anti_affinity=options.preferred_anti_affinity,
            resources=Resources(cpu_request=options.pod_cpu) if options.pod_cpu else None,
            workload_pods=options.workers + 1,
            keep_on_failure=options.keep,
            notify=progress.info,
            warn=progress.warn,
        )

    def __init__(
        self,
        *,
        context: str | None = None,
        namespace_prefix: str | None = None,
        preferred_anti_affinity: bool = False,
        resources: Resources | None = None,
        workload_pods: int = 0,
        placement: Placement = ANYWHERE,
        port: int = DEFAULT_PORT,
        keep_on_failure: bool = False,
        notify: Callable[[str], None] | None = None,
        warn: Callable[[str], None] | None = None,
        kube: Kube | None = None,
        poll_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.context = context
        self.namespace_prefix = namespace_prefix
        self.preferred_anti_affinity = preferred_anti_affinity
        self.resources = resources or Resources()
        #: no ``--pod-cpu``: the requests are fitted to the cluster at deploy (:meth:`fit_cpu_requests`)
        self.fit_cpu = resources is None
        self.workload_pods = workload_pods  # Locust pods (master and workers) that share the CPU
        self.pod_cpu: str | None = None  # the request every pod got when they were fitted
        self.placement = placement
        self.port = port
        self.keep_on_failure = keep_on_failure
        self.notify = changes_only(notify or (lambda text: log.info("%s", text)))
        self.warn = warn or (lambda text: log.warning("%s", text))
        self._kube = kube
        self.poll_s = poll_s
        self.clock = clock
        self.sleep = sleep

    def kube(self) -> Kube:
        if self._kube is None:
            self._kube = connect(self.context)
        return self._kube

    def addressing(self, run_id: str) -> Addressing:
        return addressing(run_namespace(run_id, self.namespace_prefix), self.port)

    def deploy(self, request: DeployRequest) -> K8sDeployment:
        kube = self.kube()
        try:
            nodes = schedulable_nodes(kube.core.list_node().items, self.placement)
        except Exception as e:
            raise BackendError(f"listing nodes of context {kube.context!r}: {api_message(e)}") from None
        need = request.nodes_needed
        preferred = self.preferred_anti_affinity and nodes < need
        warnings = []
        warning = anti_affinity_warning(need, nodes, self.preferred_anti_affinity)
        if warning:
            warnings.append(warning)
            self.warn(warning)
        if self.fit_cpu:
            self.fit_cpu_requests(kube, len(request.configs))
        ns = run_namespace(request.run_id, self.namespace_prefix)
        objects = render_k8s(
            request.configs,
            request.run_id,
            image=request.image,
            namespace=ns,
            port=self.port,
            preferred_anti_affinity=preferred,
            resources=self.resources,
            server_version=kube.server_version,
            placement=self.placement,
            tls_dir=tls.directory(),
        )
        meta = objects[0]["metadata"]
        objects[0] = {**objects[0], "metadata": {**meta, "labels": {**meta["labels"], MANAGED_BY: MANAGER}}}
        write_yaml_documents(request.run_dir / contract.MANIFESTS_DIR / contract.K8S_OBJECTS, objects)
        brokers = [o["metadata"]["name"] for o in objects if o["kind"] == "Pod"]
        pods = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod"}
        dep = K8sDeployment(kube, request, ns, brokers, self, warnings, pods)
        request.state.k8s_namespace = ns
        request.state.k8s_context = kube.context
        request.state.save()
        try:
            for obj in objects:
                apply(kube, obj)
            self.notify(f"applied {len(objects)} objects in namespace {ns}")
            dep.wait_ready(request.ready_timeout_s)
            dep.start_forwards()
        except BaseException:
            if not self.keep_on_failure:
                try:
                    dep.teardown()
                except BackendError as e:
                    self.warn(str(e))
            raise
        return dep

    def fit_cpu_requests(self, kube: Kube, brokers: int) -> None:
        """Lower every pod's CPU request to one that fits what the schedulable nodes have left, when the
        default requests (brokers', Locust's) do not (:mod:`~.cpu_fit`); a cluster that cannot say
        keeps the defaults."""
        try:
            serialize = kube.core.api_client.sanitize_for_serialization
            nodes = serialize(kube.core.list_node().items)
            pods = serialize(kube.core.list_pod_for_all_namespaces().items)
        except Exception as e:
            log.info("pod CPU requests kept: the cluster's free CPU is unknown (%s)", api_message(e))
            return
        asked = [millicores(self.resources.cpu_request)] * brokers
        asked += [millicores(LOCUST_CPU_REQUEST)] * self.workload_pods
        fit = fitted_request(asked, free_millicores(nodes, pods))
        if fit is not None:
            self.resources = replace(self.resources, cpu_request=fit.quantity)
            self.pod_cpu = fit.quantity
            self.notify(fit.describe())
