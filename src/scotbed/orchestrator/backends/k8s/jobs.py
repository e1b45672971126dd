"""The workload's Kubernetes Jobs in a run's namespace: apply them, watch them, copy their results.

Split from the broker deployment (:mod:`scotbed.orchestrator.backends.k8s.deployment`): the brokers are Pods
the deployment keeps up; the workload is Jobs that end, each pod copied as soon as its workload
containers finish (a collector container keeps the pod up meanwhile, :mod:`.transfer`).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from scotbed import contract
from scotbed.broker import tls
from scotbed.orchestrator.backends.base import BackendError, WorkloadRun
from scotbed.orchestrator.backends.k8s import render_tls
from scotbed.orchestrator.backends.k8s.api import api_message, apply
from scotbed.orchestrator.backends.k8s.transfer import (
    COLLECT_GRACE_S,
    COLLECTOR,
    Collected,
    add_collector,
    annotate_collect,
    collect_dir,
    marker_command,
)
from scotbed.orchestrator.render import write_yaml_documents
from scotbed.workloads.k8s import RESULTS_DIR

if TYPE_CHECKING:
    from scotbed.orchestrator.backends.k8s.deployment import K8sDeployment

log = logging.getLogger(__name__)


def as_applied(
    objects: Sequence[dict[str, Any]],
    namespace: str,
    timeout_s: float,
    collect: str | None = RESULTS_DIR,
    tls_mount: bool = False,
) -> list[dict[str, Any]]:
    """The workload's objects as the backend applies them (and writes them to ``manifests/``), and as
    ``scotbed render`` shows them: in ``namespace``; a Job whose containers mount ``collect`` annotated
    to be copied out and given the collector container (:mod:`.transfer`), which holds its pod at
    most ``timeout_s`` + :data:`~.transfer.COLLECT_GRACE_S`; with ``tls_mount`` every Job's pods
    read the run's certificates. A collect annotation that names no volume mount is a ValueError."""
    applied = []
    for o in objects:
        obj = {**o, "metadata": {**o.get("metadata", {}), "namespace": namespace}}
        if collect is not None:
            obj = annotate_collect(obj, collect)
        if tls_mount:  # security.tls: the Locust users dial the brokers over TLS
            obj = render_tls.mount_in_job(obj)
        applied.append(add_collector(obj, timeout_s + COLLECT_GRACE_S))
    return applied


class WorkloadJobs:
    """One workload run of a :class:`K8sDeployment`."""

    def __init__(self, dep: K8sDeployment) -> None:
        self.dep = dep

    def run(
        self, objects: Sequence[dict[str, Any]], timeout_s: float, collect: str | None = RESULTS_DIR
    ) -> None:
        """Apply the workload's objects, wait for its Jobs, copy their collect dirs into the run directory.

        ``collect`` is the directory (laid out like the run directory) a Job's containers write their
        results to, as :mod:`scotbed.workloads.k8s` renders it; Jobs that mount it get the collect
        annotation, Jobs that carry the annotation keep theirs. The pods' container logs go to ``logs/``.

        Pods of a Job whose template carries the collect annotation are copied as soon as their workload
        containers have finished (the collector keeps the pod up meanwhile); a failed container is
        reported with its last log lines. On a timeout the files of still-running pods are copied as
        they are, then the error names every unfinished Job with its pods' problems.
        """
        try:
            objs = as_applied(objects, self.dep.namespace, timeout_s, collect, tls.directory() is not None)
        except ValueError as e:
            raise BackendError(str(e)) from None
        write_yaml_documents(
            self.dep.request.run_dir / contract.MANIFESTS_DIR / contract.K8S_WORKLOAD_OBJECTS, objs
        )
        for o in objs:
            apply(self.dep.kube, o)
        templates = {o["metadata"]["name"]: o["spec"]["template"] for o in objs if o["kind"] == "Job"}
        if not templates:
            raise BackendError("the workload has no Job to run")
        self.dep.backend.notify(f"started Jobs {', '.join(templates)}")
        selector = f"job-name in ({','.join(sorted(templates))})"
        clock = self.dep.backend.clock
        deadline = clock() + timeout_s
        collected: set[str] = set()
        failures: dict[str, str] = {}
        result = Collected()
        while True:
            try:
                pods = self.dep.pods_by_name(selector)
                jobs = {
                    j.metadata.name: j
                    for j in self.dep.kube.batch.list_namespaced_job(self.dep.namespace).items
                    if j.metadata.name in templates
                }
            except Exception as e:
                raise BackendError(
                    f"watching the workload Jobs in {self.dep.namespace}: {api_message(e)}"
                ) from None
            for name, pod in sorted(pods.items()):
                job = (pod.metadata.labels or {}).get("job-name", "")
                directory = collect_dir(templates.get(job, {}))
                self._check_pod(pod, failures)
                if directory and name not in collected and _ready_to_collect(pod):
                    self._collect_pod(pod, directory, result)
                    collected.add(name)
            states = {n: _job_state(jobs.get(n)) for n in templates}
            self.dep.backend.notify(
                "Jobs: " + ", ".join(f"{n} {s or 'running'}" for n, s in sorted(states.items()))
            )
            stuck = [
                p
                for p in self.dep.pod_problems(sorted(pods), pods, ())
                if p.fatal and p.kind in ("image", "config", "unschedulable")
            ]
            if all(states.values()) or stuck or clock() >= deadline:
                break
            self.dep.backend.sleep(self.dep.backend.poll_s)
        for p in result.problems:
            self.dep.backend.warn(p)
        self.dep.collect_problems += result.problems
        unfinished = sorted(n for n, s in states.items() if not s)
        failed = sorted(n for n, s in states.items() if s and s.startswith("Failed"))
        if not unfinished and not failed:
            return
        for name, pod in sorted(pods.items()):  # partial files beat none when the run is failing
            job = (pod.metadata.labels or {}).get("job-name", "")
            directory = collect_dir(templates.get(job, {}))
            if directory and name not in collected and _collector_running(pod):
                self._collect_pod(pod, directory, result)
        parts = []
        if failed:
            parts.append("workload Jobs failed: " + "; ".join(f"{n}: {states[n]}" for n in failed))
        if unfinished:
            why = "stopped waiting" if stuck else f"not finished after {timeout_s:.0f} s"
            parts.append(f"workload Jobs {why}: {', '.join(unfinished)}")
        found = self.dep.pod_problems(sorted(pods), pods, self.dep.namespace_events())
        problems = [p for p in found if p.pod not in failures]
        detail = "\n".join(f"  {pod}: {msg}" for pod, msg in sorted(failures.items()))
        if problems:
            detail += ("\n" if detail else "") + self.dep.problem_report(problems)
        raise BackendError("; ".join(parts) + (f"\n{detail}" if detail else ""))

    def _check_pod(self, pod: Any, failures: dict[str, str]) -> None:
        """Record (once) a workload container that exited non-zero, with its last log lines."""
        name = pod.metadata.name
        if name in failures:
            return
        for cs in (pod.status.container_statuses if pod.status else None) or []:
            term = cs.state.terminated if cs.state else None
            if cs.name == COLLECTOR or term is None or term.exit_code == 0:
                continue
            tail = self.dep.log_tail(name, cs.name, lines=15).rstrip()
            failures[name] = (
                f"container {cs.name} exited with code {term.exit_code}"
                + (f" ({term.reason})" if term.reason else "")
                + ("\n    " + tail.replace("\n", "\n    ") if tail else "")
            )
            return

    def _collect_pod(self, pod: Any, directory: str, into: Collected) -> None:
        name = pod.metadata.name
        for c in pod.spec.containers:
            if c.name != COLLECTOR:
                self.dep.save_log(name, c.name, self.dep.request.run_dir / "logs" / f"{name}-{c.name}.log")
        if self.dep.copy_dir(name, COLLECTOR, directory, self.dep.request.run_dir, into):
            self.dep.backend.notify(f"copied the files of {name}")
        with tempfile.TemporaryFile() as sink:
            try:
                self.dep.kube.streams.exec_to(
                    self.dep.namespace, name, COLLECTOR, marker_command(directory), sink, 30
                )
            except Exception as e:
                log.warning("releasing the collector of %s: %s", name, api_message(e))


def _job_state(job: Any) -> str | None:
    """'Complete', 'Failed: <reason>' or None while the Job runs."""
    if job is None or job.status is None:
        return None
    for c in job.status.conditions or []:
        if c.status != "True":
            continue
        if c.type == "Complete":
            return "Complete"
        if c.type == "Failed":
            return "Failed: " + " ".join(x for x in (c.reason, c.message) if x)
    return None


def _collector_running(pod: Any) -> bool:
    for cs in (pod.status.container_statuses if pod.status else None) or []:
        if cs.name == COLLECTOR:
            return bool(cs.state and cs.state.running)
    return False


def _ready_to_collect(pod: Any) -> bool:
    """Every workload container has finished for good while the collector still runs."""
    statuses = (pod.status.container_statuses if pod.status else None) or []
    work = [cs for cs in statuses if cs.name != COLLECTOR]
    if not work or not _collector_running(pod):
        return False
    never = (pod.spec.restart_policy if pod.spec else None) == "Never"
    for cs in work:
        term = cs.state.terminated if cs.state else None
        if term is None or (term.exit_code != 0 and not never):  # OnFailure: the kubelet restarts it
            return False
    return True


def run_in_cluster(dep: K8sDeployment, run: WorkloadRun) -> None:
    """The generated workload as Locust Jobs next to the brokers (clients dial in-cluster DNS names): the
    master releases the publishers itself once every broker reports quiescent (release ``auto``), so
    the fault timeline's clock starts at the first client publication a broker counts."""
    from scotbed.orchestrator.backends.k8s import faults
    from scotbed.orchestrator.backends.k8s.render import WORKLOAD_RELEASE, locust_jobs
    from scotbed.orchestrator.locust_driver import WorkloadFailed
    from scotbed.workloads.records import merge_workload

    spec, options = run.spec, run.options
    with run.progress.phase("workload (Kubernetes Jobs)") as ph:
        plan = run.plan(WORKLOAD_RELEASE)
        cpu = options.pod_cpu or dep.backend.pod_cpu  # the run's request, or the one fitted at deploy
        objects = locust_jobs(plan, run.run_id, options.workload_image, options.workers, cpu)
        ph.update(f"{len(plan.subscribers)} subscribers, {len(plan.publishers)} publishers")
        injector = faults.inject(spec, dep, run.run_dir)
        run.started(injector=injector)
        try:
            WorkloadJobs(dep).run(objects, spec.timeouts.run_s)
        except BackendError as e:
            raise WorkloadFailed(f"workload: {e}") from None
        if injector is not None:  # a restart still in progress: the drain asks every broker
            injector.wait_applied(spec.timeouts.ready_s)
        counts = merge_workload(run.run_dir)
        ph.update(", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    with run.progress.phase("drain") as ph:
        run.wait_quiescent(spec.timeouts.drain_s, ph)
        run.measured()
