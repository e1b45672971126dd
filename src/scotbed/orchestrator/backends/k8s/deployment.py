"""A Kubernetes run's deployment: its namespace, the broker pods in it, and what the run does with them.

Addresses: the orchestrator (outside the cluster) reaches brokers through
in-process port-forwards (see :mod:`.portforward` for why); clients run
inside the cluster (Locust Jobs, :mod:`.jobs`) and dial the brokers' DNS names. When the
orchestrator itself runs in a pod (in-cluster config) it dials DNS names too.

Files come out of pods as a tar stream over exec (:mod:`.transfer`):
broker event logs from the events emptyDir of every running broker, workload
files from the collector container :func:`.transfer.add_collector` adds.
Every API object the client library takes or returns crosses the small
:class:`Kube` bundle, so the logic is tested against an in-memory API.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scotbed.orchestrator.backends.base import BackendError, DeployRequest, WorkloadRun
from scotbed.orchestrator.backends.k8s.api import (
    Kube,
    api_message,
    connect,
    is_status,
)
from scotbed.orchestrator.backends.k8s.diagnose import (
    FINISHED_PHASES,
    PodProblem,
    dead_reason,
    describe,
    is_ready,
    pod_problem,
)
from scotbed.orchestrator.backends.k8s.faults import K8sFaults
from scotbed.orchestrator.backends.k8s.portforward import Forwarder
from scotbed.orchestrator.backends.k8s.render import (
    EVENTS_DIR,
    LABEL_COMPONENT,
    LABEL_RUN,
    broker_address,
    namespace_for,
)
from scotbed.orchestrator.backends.k8s.transfer import (
    Collected,
    extract,
    tar_command,
)

if TYPE_CHECKING:
    from scotbed.orchestrator.backends.k8s.backend import K8sBackend

log = logging.getLogger(__name__)

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "scotbed"
#: how long ErrImagePull/ImagePullBackOff may last before the wait gives up (a registry hiccup heals,
#: an image that was never loaded into kind does not)
IMAGE_PULL_GRACE_S = 30.0
EXEC_TIMEOUT_S = 300.0


def run_namespace(run_id: str, prefix: str | None = None) -> str:
    """The run's namespace, as the renderer names it (:func:`.render.namespace_for`)."""
    return namespace_for(run_id, prefix)


class K8sDeployment:
    """A run's namespace and what the orchestrator needs from it (see the base module's Deployment);
    ``brokers`` are the pods it waits for, forwards to and collects from (peer pods: a subclass)."""

    #: the pods' ``app.kubernetes.io/component`` label
    component = "broker"

    def __init__(
        self,
        kube: Kube,
        request: DeployRequest,
        namespace: str,
        brokers: list[str],
        backend: K8sBackend,
        warnings: list[str],
        pods: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.kube = kube
        self.request = request
        self.namespace = namespace
        self.brokers = brokers
        self.backend = backend
        self.warnings = warnings
        self.port = backend.port
        self.collect_problems: list[str] = []
        self._forwards: dict[str, Forwarder] = {}
        self._torn_down = False
        self._selector = f"{LABEL_RUN}={request.run_id},{LABEL_COMPONENT}={self.component}"
        #: what the fault timeline deletes and creates again: ``pods`` are the rendered Pods (broker id ->
        #: object) a restart creates again
        self.fault_target = K8sFaults(self, pods or {}, request.configs, request.ready_timeout_s)

    # -- addresses ---------------------------------------------------------------------------------

    @property
    def admin_addresses(self) -> dict[str, str]:
        if self._forwards:
            return {b: f.address for b, f in self._forwards.items()}
        return self.client_addresses

    @property
    def client_addresses(self) -> dict[str, str]:
        return {b: broker_address(b, self.namespace, self.port) for b in self.brokers}

    @property
    def metrics_addresses(self) -> dict[str, str]:
        """Inside the cluster (the pods' DNS names); a scraper outside uses the pods' annotations."""
        return self.backend.addressing(self.request.run_id).metrics(self.request.configs)

    def start_forwards(self) -> None:
        """One local port per broker, unless the orchestrator runs inside the cluster."""
        if self.kube.in_cluster or self._forwards:
            return
        for b in self.brokers:
            self._forwards[b] = Forwarder(b, self._connector(b)).start()

    def _connector(self, broker: str) -> Callable[[], Any]:
        streams, ns, port = self.kube.streams, self.namespace, self.port
        return lambda: streams.connect(ns, broker, port)

    # -- readiness ---------------------------------------------------------------------------------

    def pods_by_name(self, selector: str | None = None) -> dict[str, Any]:
        items = self.kube.core.list_namespaced_pod(self.namespace, label_selector=selector or self._selector)
        return {p.metadata.name: p for p in items.items}

    def namespace_events(self) -> list[Any]:
        try:
            return list(self.kube.core.list_namespaced_event(self.namespace).items)
        except Exception as e:
            log.warning("listing events of %s: %s", self.namespace, api_message(e))
            return []

    def log_tail(self, pod: str, container: str | None, previous: bool = False, lines: int = 20) -> str:
        try:
            text = self.kube.core.read_namespaced_pod_log(
                pod, self.namespace, container=container, previous=previous, tail_lines=lines
            )
        except Exception as e:
            return f"(log unavailable: {api_message(e)})"
        return str(text or "")

    def pod_problems(
        self, names: Sequence[str], pods: dict[str, Any], events: Sequence[Any]
    ) -> list[PodProblem]:
        out = []
        for n in names:
            pod = pods.get(n)
            if pod is None:
                out.append(PodProblem(n, "gone", "pod does not exist (deleted or never created)", True))
                continue
            p = pod_problem(pod, events)
            if p is not None:
                out.append(p)
        return out

    def problem_report(self, problems: Sequence[PodProblem]) -> str:
        logs = {
            p.pod: self.log_tail(p.pod, p.log_container, p.log_previous)
            for p in problems
            if p.log_container is not None
        }
        return describe(problems, logs)

    def wait_ready(self, timeout_s: float, only: Sequence[str] | None = None) -> None:
        """Poll until every broker pod (or those ``only``) is Ready; fail early on problems that cannot
        heal."""
        brokers = self.brokers if only is None else list(only)
        clock, total = self.backend.clock, len(brokers)
        deadline = clock() + timeout_s
        first_seen: dict[tuple[str, str], float] = {}
        while True:
            try:
                pods = self.pods_by_name()
            except Exception as e:
                raise BackendError(
                    f"listing {self.component} pods in {self.namespace}: {api_message(e)}"
                ) from None
            waiting = [b for b in brokers if b not in pods or not is_ready(pods[b])]
            self.backend.notify(f"{total - len(waiting)}/{total} {self.component} pods Ready")
            if not waiting:
                return
            problems = self.pod_problems(waiting, pods, ())
            now = clock()
            for p in problems:
                first_seen.setdefault((p.pod, p.kind), now)
            stuck = [
                p
                for p in problems
                if p.fatal or (p.kind == "image" and now - first_seen[(p.pod, p.kind)] >= IMAGE_PULL_GRACE_S)
            ]
            if stuck or now >= deadline:
                problems = self.pod_problems(waiting, pods, self.namespace_events())
                if stuck:
                    head = f"{self.component} pods in namespace {self.namespace} failed: " + ", ".join(
                        sorted(p.pod for p in stuck)
                    )
                else:
                    head = (
                        f"{len(waiting)} of {total} {self.component} pods not Ready after {timeout_s:.0f} s "
                        f"in namespace {self.namespace}: {', '.join(sorted(waiting))}"
                    )
                extra = "".join(f"\n  note: {w}" for w in self.warnings)
                raise BackendError(f"{head}\n{self.problem_report(problems)}{extra}")
            self.backend.sleep(self.backend.poll_s)

    # -- liveness ----------------------------------------------------------------------------------

    def dead(self) -> dict[str, str]:
        try:
            pods = self.pods_by_name()
        except Exception as e:  # a blip of the API server is not a dead broker
            log.warning("listing %s pods in %s: %s", self.component, self.namespace, api_message(e))
            return {}
        out = {}
        for b in self.brokers:
            pod = pods.get(b)
            if pod is None:
                out[b] = "pod is gone"
                continue
            reason = dead_reason(pod)
            if reason is None:
                continue
            statuses = (pod.status.container_statuses if pod.status else None) or []
            restarted = any((cs.restart_count or 0) > 0 and cs.state and cs.state.running for cs in statuses)
            tail = self.log_tail(b, None, previous=restarted, lines=3).strip().replace("\n", " | ")
            out[b] = reason + (f": {tail}" if tail else "")
        return out

    # -- files -------------------------------------------------------------------------------------

    def copy_dir(self, pod: str, container: str, directory: str, dest: Path, into: Collected) -> bool:
        with tempfile.TemporaryFile() as tmp:
            try:
                rc, err = self.kube.streams.exec_to(
                    self.namespace, pod, container, tar_command(directory), tmp, EXEC_TIMEOUT_S
                )
            except Exception as e:
                into.problems.append(f"{pod}: copying {directory} failed: {api_message(e)}")
                return False
            if rc != 0:
                why = err.strip().splitlines()[-1] if err.strip() else f"exit code {rc}"
                into.problems.append(f"{pod}: copying {directory} failed: {why}")
                return False
            tmp.seek(0)
            try:
                written, skipped = extract(tmp, dest)
            except Exception as e:  # a truncated stream: keep what was extracted before it
                into.problems.append(f"{pod}: reading the tar stream of {directory} failed: {e}")
                return False
        into.written += written
        into.problems += [f"{pod}: skipped {s}" for s in skipped]
        return True

    def save_log(self, pod: str, container: str | None, dest: Path) -> None:
        try:
            text = self.kube.core.read_namespaced_pod_log(pod, self.namespace, container=container)
        except Exception as e:
            log.info("no container log for %s: %s", pod, api_message(e))
            return
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(str(text or ""))

    def collect(self, events_dir: Path, only: Sequence[str] | None = None) -> list[Path]:
        """Every running broker's (or those ``only``) event log into ``events_dir``, container logs into
        ``logs/``; a pod that is gone or stopped is reported in :attr:`collect_problems` (its emptyDir
        cannot be read)."""
        events_dir.mkdir(parents=True, exist_ok=True)
        result = Collected()
        try:
            pods = self.pods_by_name()
        except Exception as e:
            self.collect_problems = [f"listing {self.component} pods in {self.namespace}: {api_message(e)}"]
            return []
        for b in self.brokers if only is None else only:
            pod = pods.get(b)
            if pod is None:
                result.problems.append(f"{b}: pod is gone, its event log is lost")
                continue
            container = pod.spec.containers[0].name
            self.save_log(b, container, self.request.run_dir / "logs" / f"{b}.log")
            running = any(cs.state and cs.state.running for cs in (pod.status.container_statuses or []))
            if not running:
                why = dead_reason(pod) or f"phase {pod.status.phase}"
                result.problems.append(f"{b}: not running ({why}), its event log cannot be read")
                continue
            self.copy_dir(b, container, EVENTS_DIR, events_dir, result)
        self.collect_problems = result.problems
        for p in result.problems:
            self.backend.warn(p)
        return sorted(result.written)

    # -- workload ----------------------------------------------------------------------------------

    def run_workload(self, run: WorkloadRun) -> None:
        """Locust as Jobs next to the brokers (:func:`.jobs.run_in_cluster`)."""
        from scotbed.orchestrator.backends.k8s.jobs import run_in_cluster

        run_in_cluster(self, run)

    # -- teardown ----------------------------------------------------------------------------------

    def teardown(self) -> None:
        for f in self._forwards.values():
            f.close()
        self._forwards.clear()
        if self._torn_down:
            return
        deleted = delete_namespaces(
            self.kube, [self.namespace], timeout_s=120.0, clock=self.backend.clock, sleep=self.backend.sleep
        )
        if self.namespace not in deleted:
            raise BackendError(
                f"namespace {self.namespace} is still terminating; `scotbed down --backend k8s "
                f"{self.request.run_id}` removes it later"
            )
        self._torn_down = True


def delete_namespaces(
    kube: Kube,
    names: Sequence[str],
    timeout_s: float = 120.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Delete ``names`` and wait (bounded) until they are gone; returns the ones that are gone."""
    for n in names:
        try:
            kube.core.delete_namespace(n)
        except Exception as e:
            if not is_status(e, 404, 409):
                raise BackendError(f"deleting namespace {n}: {api_message(e)}") from None
    deadline = clock() + timeout_s
    left = list(names)
    while left:
        still = []
        for n in left:
            try:
                kube.core.read_namespace(n)
                still.append(n)
            except Exception as e:
                if not is_status(e, 404):
                    raise BackendError(f"reading namespace {n}: {api_message(e)}") from None
            else:
                release_finished_pods(kube, n)
        left = still
        if not left or clock() >= deadline:
            break
        sleep(1.0)
    return [n for n in names if n not in left]


def release_finished_pods(kube: Kube, namespace: str) -> list[str]:
    """Delete at once (grace 0) the namespace's pods that are being deleted and whose containers have
    all exited (phase Succeeded or Failed); returns their names.

    Such a pod has nothing left to stop, but a v1.20 kubelet sometimes confirms its deletion only when
    its container GC (once a minute) has removed the pod's sandbox (seen with a broker pod re-made
    after a fault). The namespace controller retries with a doubling back-off (5, 10, 20, 40, 80 s),
    so a minute's wait for the GC can become two and outlast the teardown's bound. A running pod is
    never forced: its broker still drains.
    """
    try:
        pods = kube.core.list_namespaced_pod(namespace).items
    except Exception as e:
        if is_status(e, 404):
            return []
        raise BackendError(f"listing the pods of namespace {namespace}: {api_message(e)}") from None
    finished = [
        p.metadata.name
        for p in pods
        if p.metadata.deletion_timestamp is not None and p.status and p.status.phase in FINISHED_PHASES
    ]
    for name in finished:
        try:
            kube.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        except Exception as e:
            if not is_status(e, 404, 409):
                raise BackendError(f"deleting finished pod {namespace}/{name}: {api_message(e)}") from None
    return finished


def down_all(context: str | None = None, run_id: str | None = None, kube: Kube | None = None) -> list[str]:
    """Delete every namespace labelled managed-by=scotbed (or only ``run_id``'s); returns those deleted."""
    kube = kube or connect(context)
    selector = f"{MANAGED_BY}={MANAGER}" + (f",{LABEL_RUN}={run_id}" if run_id else "")
    try:
        names = [ns.metadata.name for ns in kube.core.list_namespace(label_selector=selector).items]
    except Exception as e:
        raise BackendError(
            f"listing scotbed namespaces of context {kube.context!r}: {api_message(e)}"
        ) from None
    gone = delete_namespaces(kube, names)
    stuck = [n for n in names if n not in gone]
    if stuck:
        raise BackendError(f"namespaces still terminating after 120 s: {', '.join(stuck)}")
    return gone
