"""The Kubernetes backend against the real client library's model objects and an in-memory API.

``FakeApi`` implements exactly the CoreV1Api / BatchV1Api / NetworkingV1Api
methods the backend calls, storing what it is given and answering with real
``kubernetes.client`` models (V1Pod, V1PodStatus, CoreV1Event, V1Job ...) and
real ``ApiException``s; tests play the kubelet and scheduler by setting pod
statuses. The e2e test at the end needs a cluster (SCOTBED_KUBE_CONTEXT).
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import socket
import tarfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest
import yaml
from kubernetes import client as k
from kubernetes.client.exceptions import ApiException

from scotbed.experiment.spec import build_scot, parse_spec
from scotbed.orchestrator.backends.base import BackendError, DeployRequest
from scotbed.orchestrator.backends.k8s.api import Kube, connect, is_status, schedulable_nodes
from scotbed.orchestrator.backends.k8s.backend import K8sBackend, changes_only
from scotbed.orchestrator.backends.k8s.deployment import (
    IMAGE_PULL_GRACE_S,
    MANAGED_BY,
    delete_namespaces,
    down_all,
    release_finished_pods,
    run_namespace,
)
from scotbed.orchestrator.backends.k8s.diagnose import dead_reason, pod_problem
from scotbed.orchestrator.backends.k8s.jobs import WorkloadJobs
from scotbed.orchestrator.backends.k8s.portforward import PROXY_THREAD, Forwarder
from scotbed.orchestrator.backends.k8s.render import EVENTS_DIR, LABEL_RUN, broker_address
from scotbed.orchestrator.backends.k8s.transfer import (
    COLLECT_ANNOTATION,
    COLLECTED_MARKER,
    COLLECTOR,
    add_collector,
    annotate_collect,
    extract,
)
from scotbed.orchestrator.plan import deployed_configs
from scotbed.orchestrator.state import RunState

# -- the in-memory API ---------------------------------------------------------------------------------


def _not_found(what: str) -> ApiException:
    e = ApiException(status=404, reason="Not Found")
    e.body = f'{{"kind": "Status", "message": "{what} not found", "code": 404}}'
    return e


def _matches(labels: dict[str, str], selector: str | None) -> bool:
    """The two selector forms the backend uses: ``k=v,k=v`` and ``k in (a,b)``."""
    if not selector:
        return True
    for term in re.split(r",(?![^(]*\))", selector):
        m = re.fullmatch(r"\s*(\S+)\s+in\s+\((.*)\)\s*", term)
        if m:
            if labels.get(m.group(1)) not in [v.strip() for v in m.group(2).split(",")]:
                return False
            continue
        key, _, value = term.partition("=")
        if labels.get(key.strip()) != value.strip():
            return False
    return True


def ready_status(pod: k.V1Pod) -> k.V1PodStatus:
    return k.V1PodStatus(
        phase="Running",
        conditions=[k.V1PodCondition(type="Ready", status="True")],
        container_statuses=[
            k.V1ContainerStatus(
                name=c.name,
                image=c.image,
                image_id="",
                ready=True,
                restart_count=0,
                state=k.V1ContainerState(running=k.V1ContainerStateRunning()),
            )
            for c in pod.spec.containers
        ],
    )


def waiting(reason: str, message: str = "", image: str = "scotbed-broker:test") -> k.V1PodStatus:
    return k.V1PodStatus(
        phase="Pending",
        conditions=[k.V1PodCondition(type="PodScheduled", status="True")],
        container_statuses=[
            k.V1ContainerStatus(
                name="broker",
                image=image,
                image_id="",
                ready=False,
                restart_count=0,
                state=k.V1ContainerState(waiting=k.V1ContainerStateWaiting(reason=reason, message=message)),
            )
        ],
    )


def terminated(name: str, code: int, reason: str = "Error", restarts: int = 0) -> k.V1ContainerStatus:
    return k.V1ContainerStatus(
        name=name,
        image="img",
        image_id="",
        ready=False,
        restart_count=restarts,
        state=k.V1ContainerState(terminated=k.V1ContainerStateTerminated(exit_code=code, reason=reason)),
    )


def running(name: str, restarts: int = 0) -> k.V1ContainerStatus:
    return k.V1ContainerStatus(
        name=name,
        image="img",
        image_id="",
        ready=True,
        restart_count=restarts,
        state=k.V1ContainerState(running=k.V1ContainerStateRunning()),
    )


class FakeApi:
    """One cluster's API: CoreV1Api, BatchV1Api and NetworkingV1Api methods in one object."""

    def __init__(self, workers: int = 3) -> None:
        self.nodes = [
            k.V1Node(
                metadata=k.V1ObjectMeta(name="kind-control-plane"),
                spec=k.V1NodeSpec(
                    taints=[k.V1Taint(key="node-role.kubernetes.io/control-plane", effect="NoSchedule")]
                ),
                status=k.V1NodeStatus(conditions=[k.V1NodeCondition(type="Ready", status="True")]),
            )
        ] + [
            k.V1Node(
                metadata=k.V1ObjectMeta(name=f"kind-worker{i}"),
                spec=k.V1NodeSpec(),
                status=k.V1NodeStatus(conditions=[k.V1NodeCondition(type="Ready", status="True")]),
            )
            for i in range(workers)
        ]
        self.namespaces: dict[str, k.V1Namespace] = {}
        self.created: list[tuple[str, str, dict[str, Any]]] = []  # (kind, name, body) in call order
        self.pods: dict[tuple[str, str], k.V1Pod] = {}
        self.jobs: dict[tuple[str, str], k.V1Job] = {}
        self.events: list[k.CoreV1Event] = []
        self.logs: dict[tuple[str, str | None, bool], str] = {}  # (pod, container, previous) -> text
        self.deletes: list[str] = []
        self.terminating_polls = 1  # reads that still find a deleted namespace

    # nodes and namespaces
    def list_node(self) -> k.V1NodeList:
        return k.V1NodeList(items=self.nodes)

    def create_namespace(self, body: dict[str, Any]) -> k.V1Namespace:
        ns = k.V1Namespace.from_dict(body)
        assert ns is not None
        name = ns.metadata.name
        if name in self.namespaces:
            raise ApiException(status=409, reason="Conflict")
        self.namespaces[name] = ns
        self.created.append(("Namespace", name, body))
        return ns

    def read_namespace(self, name: str) -> k.V1Namespace:
        ns = self.namespaces.get(name)
        if ns is None:
            raise _not_found(f'namespaces "{name}"')
        if ns.metadata.deletion_timestamp is not None:
            if self.terminating_polls <= 0:
                del self.namespaces[name]
                raise _not_found(f'namespaces "{name}"')
            self.terminating_polls -= 1
        return ns

    def delete_namespace(self, name: str) -> k.V1Status:
        ns = self.namespaces.get(name)
        if ns is None:
            raise _not_found(f'namespaces "{name}"')
        self.deletes.append(name)
        ns.metadata.deletion_timestamp = ns.metadata.creation_timestamp or _now()
        for key in [key for key in self.pods if key[0] == name]:
            del self.pods[key]
        return k.V1Status(status="Success")

    def list_namespace(self, label_selector: str | None = None) -> k.V1NamespaceList:
        return k.V1NamespaceList(
            items=[n for n in self.namespaces.values() if _matches(n.metadata.labels or {}, label_selector)]
        )

    # namespaced objects
    def _store(self, kind: str, namespace: str, body: dict[str, Any]) -> None:
        if namespace not in self.namespaces:
            raise _not_found(f'namespaces "{namespace}"')
        assert body["metadata"]["namespace"] == namespace
        self.created.append((kind, body["metadata"]["name"], body))

    def create_namespaced_config_map(self, namespace: str, body: dict[str, Any]) -> None:
        self._store("ConfigMap", namespace, body)

    def create_namespaced_service(self, namespace: str, body: dict[str, Any]) -> None:
        self._store("Service", namespace, body)

    def create_namespaced_network_policy(self, namespace: str, body: dict[str, Any]) -> None:
        self._store("NetworkPolicy", namespace, body)

    def create_namespaced_pod(self, namespace: str, body: dict[str, Any]) -> k.V1Pod:
        self._store("Pod", namespace, body)
        pod = k.V1Pod.from_dict(body)
        assert pod is not None
        pod.status = k.V1PodStatus(phase="Pending")
        self.pods[(namespace, pod.metadata.name)] = pod
        return pod

    def create_namespaced_job(self, namespace: str, body: dict[str, Any]) -> k.V1Job:
        self._store("Job", namespace, body)
        job = k.V1Job.from_dict(body)
        assert job is not None
        job.status = k.V1JobStatus()
        self.jobs[(namespace, job.metadata.name)] = job
        template = body["spec"]["template"]
        pod = k.V1Pod.from_dict(
            {
                "metadata": {
                    "name": f"{job.metadata.name}-abcde",
                    "namespace": namespace,
                    "labels": {
                        **template.get("metadata", {}).get("labels", {}),
                        "job-name": job.metadata.name,
                    },
                },
                "spec": template["spec"],
            }
        )
        assert pod is not None
        pod.status = k.V1PodStatus(
            phase="Running", container_statuses=[running(c.name) for c in pod.spec.containers]
        )
        self.pods[(namespace, pod.metadata.name)] = pod
        return job

    def list_namespaced_pod(self, namespace: str, label_selector: str | None = None) -> k.V1PodList:
        return k.V1PodList(
            items=[
                p
                for (ns, _), p in self.pods.items()
                if ns == namespace and _matches(p.metadata.labels or {}, label_selector)
            ]
        )

    def list_namespaced_job(self, namespace: str) -> k.V1JobList:
        return k.V1JobList(items=[j for (ns, _), j in self.jobs.items() if ns == namespace])

    def list_namespaced_event(self, namespace: str) -> k.CoreV1EventList:
        return k.CoreV1EventList(items=self.events)

    def read_namespaced_pod_log(
        self,
        name: str,
        namespace: str,
        container: str | None = None,
        previous: bool | None = None,
        tail_lines: int | None = None,
    ) -> str:
        if (namespace, name) not in self.pods:
            raise _not_found(f'pods "{name}"')
        text = self.logs.get(
            (name, container, bool(previous)), self.logs.get((name, None, bool(previous)), "")
        )
        lines = text.splitlines(keepends=True)
        return "".join(lines[-tail_lines:] if tail_lines else lines)

    # helpers for the tests (the kubelet's and scheduler's side)
    def pods_in(self, namespace: str) -> list[k.V1Pod]:
        return [p for (ns, _), p in self.pods.items() if ns == namespace]

    def set_all(self, namespace: str, status: Callable[[k.V1Pod], k.V1PodStatus]) -> None:
        for p in self.pods_in(namespace):
            if "job-name" not in (p.metadata.labels or {}):
                p.status = status(p)


def _now() -> Any:
    import datetime

    return datetime.datetime.now(datetime.UTC)


class FakeStreams:
    """exec runs the two commands the backend sends (tar a dir, touch the marker) over in-memory files."""

    def __init__(self, api: FakeApi) -> None:
        self.api = api
        self.files: dict[tuple[str, str], dict[str, bytes]] = {}  # (pod, container) -> path -> content
        self.execs: list[tuple[str, str, list[str]]] = []
        self.on_marker: Callable[[str], None] = lambda pod: None
        self.connect_to: tuple[str, int] | None = None

    def exec_to(
        self, namespace: str, pod: str, container: str, command: list[str], out: IO[bytes], timeout_s: float
    ) -> tuple[int | None, str]:
        self.execs.append((pod, container, command))
        p = self.api.pods.get((namespace, pod))
        statuses = {cs.name: cs for cs in (p.status.container_statuses or [])} if p and p.status else {}
        cs = statuses.get(container)
        if cs is None or cs.state.running is None:
            e = ApiException(status=400, reason="Bad Request")
            e.body = '{"message": "container not found or not running"}'
            raise e
        assert command[0] == "python" and command[1] == "-c"
        target = command[-1]
        if target.endswith(COLLECTED_MARKER):
            self.files.setdefault((pod, container), {})[target] = b""
            self.on_marker(pod)
            return 0, ""
        prefix = target.rstrip("/") + "/"
        files = {
            path[len(prefix) :]: data
            for path, data in self.files.get((pod, container), {}).items()
            if path.startswith(prefix) and not path[len(prefix) :].startswith(".")
        }
        if not files and not any(path.startswith(prefix) for path in self.files.get((pod, container), {})):
            return 1, f"FileNotFoundError: [Errno 2] No such file or directory: '{target}'\n"
        with tarfile.open(fileobj=out, mode="w|") as tar:
            for name, data in sorted(files.items()):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return 0, ""

    def connect(self, namespace: str, pod: str, port: int) -> socket.socket:
        assert self.connect_to is not None
        return socket.create_connection(self.connect_to)


class Clock:
    def __init__(self, api: FakeApi) -> None:
        self.now = 0.0
        self.ticks: list[Callable[[float], None]] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s
        for t in self.ticks:
            t(self.now)


SPEC = {
    "name": "k8stest",
    "topology": {"kind": "scot", "acyclic": "paper-fig2", "connectivity": 3},
    "routing": "snr",
    "matching": "counting",
}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))

    class Env:
        def __init__(self, workers: int = 3, **backend: Any) -> None:
            self.api = FakeApi(workers)
            self.streams = FakeStreams(self.api)
            self.kube = Kube(self.api, self.api, self.api, self.streams, context="kind-scotbed")
            self.clock = Clock(self.api)
            self.spec = parse_spec(SPEC)
            self.scot = build_scot(self.spec)
            self.warnings: list[str] = []
            self.backend = K8sBackend(
                kube=self.kube,
                clock=self.clock,
                sleep=self.clock.sleep,
                warn=self.warnings.append,
                **backend,
            )
            self.run_id = "k8stest-20250101T000000-0123abcd"
            self.ns = run_namespace(self.run_id)
            self.state = RunState(self.run_id, "k8s", str(tmp_path / "run"))
            self.request = DeployRequest(
                self.run_id,
                tmp_path / "run",
                deployed_configs(self.spec, self.scot, self.backend.addressing(self.run_id), self.run_id),
                ready_timeout_s=60,
                state=self.state,
                image="scotbed-broker:test",
                nodes_needed=self.scot.chromatic_need(),
            )

    return Env


# -- deploy and wait ----------------------------------------------------------------------------------


def test_schedulable_nodes_skip_tainted_cordoned_and_not_ready_nodes() -> None:
    api = FakeApi(workers=4)
    api.nodes[1].spec.unschedulable = True
    api.nodes[2].status.conditions[0].status = "False"
    assert schedulable_nodes(api.nodes) == 2


def test_deploy_applies_in_order_records_state_first_and_waits_for_ready(env: Any) -> None:
    e = env()
    saved: list[tuple[str | None, int]] = []
    real_save = e.state.save
    e.state.save = lambda: (saved.append((e.state.k8s_namespace, len(e.api.created))), real_save())
    e.clock.ticks.append(lambda now: now >= 3 and e.api.set_all(e.ns, ready_status))
    dep = e.backend.deploy(e.request)
    try:
        assert saved == [(e.ns, 0)], "the namespace is recorded before anything is created"
        assert e.state.k8s_context == "kind-scotbed"
        kinds = [kind for kind, _, _ in e.api.created]
        assert kinds[:4] == ["Namespace", "ConfigMap", "Service", "NetworkPolicy"]
        assert kinds[4:] == ["Pod"] * 18
        labels = e.api.namespaces[e.ns].metadata.labels
        assert labels[MANAGED_BY] == "scotbed" and labels[LABEL_RUN] == e.run_id
        pod = e.api.created[4][2]
        assert "requiredDuringSchedulingIgnoredDuringExecution" in pod["spec"]["affinity"]["podAntiAffinity"]
        assert pod["spec"]["containers"][0]["image"] == "scotbed-broker:test"
        assert dep.warnings == [] and e.clock.now >= 3
        assert (e.request.run_dir / "manifests" / "k8s.yaml").is_file()
        assert dep.client_addresses["b-a-0"] == broker_address("b-a-0", e.ns)
        assert all(a.startswith("127.0.0.1:") for a in dep.admin_addresses.values())
        assert len(set(dep.admin_addresses.values())) == 18
    finally:
        dep.teardown()


def test_too_few_nodes_warn_and_switch_to_preferred_anti_affinity_when_asked(env: Any) -> None:
    e = env(workers=2, preferred_anti_affinity=True)
    e.api.set_all(e.ns, ready_status)
    e.clock.ticks.append(lambda now: e.api.set_all(e.ns, ready_status))
    dep = e.backend.deploy(e.request)
    try:
        assert len(dep.warnings) == 1 and "2 node(s) < 3" in dep.warnings[0]
        assert e.warnings == dep.warnings
        pod = e.api.created[4][2]
        assert "preferredDuringSchedulingIgnoredDuringExecution" in pod["spec"]["affinity"]["podAntiAffinity"]
    finally:
        dep.teardown()


def test_enough_nodes_keep_required_anti_affinity_even_when_preferred_was_asked(env: Any) -> None:
    e = env(workers=3, preferred_anti_affinity=True)
    e.clock.ticks.append(lambda now: e.api.set_all(e.ns, ready_status))
    dep = e.backend.deploy(e.request)
    try:
        assert dep.warnings == []
        assert (
            "requiredDuringSchedulingIgnoredDuringExecution"
            in e.api.created[4][2]["spec"]["affinity"]["podAntiAffinity"]
        )
    finally:
        dep.teardown()


def _unschedulable(pod: k.V1Pod) -> k.V1PodStatus:
    if pod.metadata.labels["scotbed.io/cluster"] != "2":
        return ready_status(pod)
    return k.V1PodStatus(
        phase="Pending",
        conditions=[
            k.V1PodCondition(
                type="PodScheduled",
                status="False",
                reason="Unschedulable",
                message="0/3 nodes are available: 1 node(s) had untolerated taint "
                "{node-role.kubernetes.io/control-plane: }, 2 node(s) didn't match pod anti-affinity rules.",
            )
        ],
    )


def test_pending_pods_are_named_with_the_scheduler_reason_and_the_namespace_is_deleted(env: Any) -> None:
    e = env(workers=2)
    e.clock.ticks.append(lambda now: e.api.set_all(e.ns, _unschedulable))
    with pytest.raises(BackendError) as err:
        e.backend.deploy(e.request)
    msg = str(err.value)
    assert "6 of 18 broker pods not Ready after 60 s" in msg
    for b in ("b-a-2", "b-f-2"):
        assert f"  {b}: Pending, not scheduled: 0/3 nodes are available" in msg
    assert "b-a-0:" not in msg
    assert "--preferred-anti-affinity" in msg and "2 node(s) < 3" in msg
    assert e.clock.now >= 60
    assert e.api.deletes == [e.ns] and e.ns not in e.api.namespaces


def test_failed_scheduling_event_explains_a_pod_without_a_condition_message() -> None:
    pod = k.V1Pod(
        metadata=k.V1ObjectMeta(name="b-a-0"), spec=k.V1PodSpec(containers=[]), status=k.V1PodStatus()
    )
    event = k.CoreV1Event(
        metadata=k.V1ObjectMeta(name="b-a-0.1"),
        involved_object=k.V1ObjectReference(kind="Pod", name="b-a-0"),
        reason="FailedScheduling",
        type="Warning",
        message="0/4 nodes are available: 3 Insufficient cpu.",
    )
    other = k.CoreV1Event(
        metadata=k.V1ObjectMeta(name="b-a-1.1"),
        involved_object=k.V1ObjectReference(kind="Pod", name="b-a-1"),
        reason="FailedScheduling",
        type="Warning",
        message="unrelated",
    )
    p = pod_problem(pod, [event, other])
    assert p is not None and p.kind == "unschedulable" and not p.fatal
    assert "3 Insufficient cpu" in p.message and "lower the requests (--pod-cpu 50m)" in p.message


def test_running_but_unready_pod_shows_the_probe_failure() -> None:
    pod = k.V1Pod(
        metadata=k.V1ObjectMeta(name="b-a-0"),
        spec=k.V1PodSpec(containers=[], node_name="kind-worker"),
        status=k.V1PodStatus(phase="Running", container_statuses=[running("broker")]),
    )
    event = k.CoreV1Event(
        metadata=k.V1ObjectMeta(name="e"),
        involved_object=k.V1ObjectReference(kind="Pod", name="b-a-0"),
        reason="Unhealthy",
        type="Warning",
        message="Readiness probe failed: service unhealthy (responded with NOT_SERVING)",
    )
    p = pod_problem(pod, [event])
    assert p is not None and p.kind == "not-ready" and "NOT_SERVING" in p.message


def test_image_pull_backoff_fails_after_the_grace_with_the_image_and_how_to_load_it(env: Any) -> None:
    e = env()
    e.clock.ticks.append(
        lambda now: e.api.set_all(e.ns, lambda p: waiting("ImagePullBackOff", 'Back-off pulling image "x"'))
    )
    with pytest.raises(BackendError) as err:
        e.backend.deploy(e.request)
    msg = str(err.value)
    assert "failed: b-a-0, b-a-1" in msg
    assert "ImagePullBackOff for image 'scotbed-broker:test'" in msg
    for how in ("`kind load docker-image", "`minikube image load", "`make local-cluster`"):
        assert how in msg
    assert IMAGE_PULL_GRACE_S <= e.clock.now < 60, "gives up before the ready timeout"


def test_crash_loop_shows_the_previous_containers_last_log_lines(env: Any) -> None:
    e = env()

    def crash(p: k.V1Pod) -> k.V1PodStatus:
        if p.metadata.name != "b-c-1":
            return ready_status(p)
        st = waiting("CrashLoopBackOff", "back-off 10s restarting failed container")
        st.container_statuses[0].restart_count = 3
        st.container_statuses[0].last_state = k.V1ContainerState(
            terminated=k.V1ContainerStateTerminated(exit_code=1, reason="Error")
        )
        return st

    e.api.logs[("b-c-1", "broker", True)] = "".join(f"line {i}\n" for i in range(30)) + "ConfigError: bad\n"
    e.api.logs[("b-c-1", "broker", False)] = "current instance, not the crashed one\n"
    e.clock.ticks.append(lambda now: e.api.set_all(e.ns, crash))
    with pytest.raises(BackendError) as err:
        e.backend.deploy(e.request)
    msg = str(err.value)
    assert "b-c-1: container broker is in CrashLoopBackOff after 3 restart(s); last exit code 1" in msg
    assert "ConfigError: bad" in msg and "line 29" in msg and "line 5\n" not in msg
    assert "current instance" not in msg
    assert e.clock.now < 60


def test_a_broker_that_exits_fails_the_wait_with_its_log(env: Any) -> None:
    e = env()

    def exited(p: k.V1Pod) -> k.V1PodStatus:
        if p.metadata.name != "b-d-0":
            return ready_status(p)
        return k.V1PodStatus(phase="Failed", container_statuses=[terminated("broker", 2)])

    e.api.logs[("b-d-0", "broker", False)] = "Traceback\nOSError: address in use\n"
    e.clock.ticks.append(lambda now: e.api.set_all(e.ns, exited))
    with pytest.raises(BackendError) as err:
        e.backend.deploy(e.request)
    assert "b-d-0: container broker exited with code 2 (Error)" in str(err.value)
    assert "OSError: address in use" in str(err.value)


def test_keep_on_failure_leaves_the_namespace(env: Any) -> None:
    e = env(keep_on_failure=True)
    e.clock.ticks.append(lambda now: e.api.set_all(e.ns, lambda p: waiting("InvalidImageName")))
    with pytest.raises(BackendError):
        e.backend.deploy(e.request)
    assert e.api.deletes == [] and e.state.k8s_namespace == e.ns


# -- running: dead, collect, teardown ------------------------------------------------------------------


def _deployed(e: Any) -> Any:
    e.clock.ticks.append(lambda now: e.api.set_all(e.ns, ready_status))
    dep = e.backend.deploy(e.request)
    e.clock.ticks.clear()
    return dep


def test_dead_reports_exits_restarts_and_vanished_pods(env: Any) -> None:
    e = env()
    dep = _deployed(e)
    try:
        assert dep.dead() == {}
        pods = {p.metadata.name: p for p in e.api.pods_in(e.ns)}
        pods["b-a-0"].status = k.V1PodStatus(
            phase="Failed", container_statuses=[terminated("broker", 137, "OOMKilled")]
        )
        pods["b-b-1"].status.container_statuses = [running("broker", restarts=1)]
        del e.api.pods[(e.ns, "b-c-2")]
        e.api.logs[("b-a-0", None, False)] = "a\nb\nMemoryError\n"
        e.api.logs[("b-b-1", None, True)] = "the previous instance died\n"
        dead = dep.dead()
        assert set(dead) == {"b-a-0", "b-b-1", "b-c-2"}
        assert dead["b-a-0"].startswith("container broker exited with code 137 (OOMKilled)")
        assert dead["b-a-0"].endswith("a | b | MemoryError")
        assert "restarted 1 time(s)" in dead["b-b-1"] and "previous instance died" in dead["b-b-1"]
        assert dead["b-c-2"] == "pod is gone"
    finally:
        dep.teardown()


def test_dead_reason_of_a_healthy_pod_is_none() -> None:
    pod = k.V1Pod(
        metadata=k.V1ObjectMeta(name="x"),
        status=k.V1PodStatus(phase="Running", container_statuses=[running("broker")]),
    )
    assert dead_reason(pod) is None


def test_collect_copies_event_logs_and_reports_lost_pods(env: Any, tmp_path: Path) -> None:
    e = env()
    dep = _deployed(e)
    try:
        for p in e.api.pods_in(e.ns):
            name = p.metadata.name
            e.streams.files[(name, "broker")] = {
                f"{EVENTS_DIR}/{name}.jsonl": f'{{"node": "{name}"}}\n'.encode()
            }
            e.api.logs[(name, "broker", False)] = f"{name} started\n"
        pods = {p.metadata.name: p for p in e.api.pods_in(e.ns)}
        pods["b-e-1"].status = k.V1PodStatus(phase="Failed", container_statuses=[terminated("broker", 1)])
        del e.api.pods[(e.ns, "b-f-0")]
        e.streams.files[("b-a-1", "broker")] = {}
        events = tmp_path / "run" / "events"
        got = dep.collect(events)
        assert len(got) == 15 and all(p.parent == events for p in got)
        assert (events / "b-a-0.jsonl").read_text() == '{"node": "b-a-0"}\n'
        problems = "\n".join(dep.collect_problems)
        assert "b-f-0: pod is gone" in problems
        assert "b-e-1: not running (container broker exited with code 1" in problems
        assert "b-a-1: copying /var/log/scotbed failed: FileNotFoundError" in problems
        assert len(dep.collect_problems) == 3 and e.warnings[-3:] == dep.collect_problems
        assert (tmp_path / "run" / "logs" / "b-e-1.log").read_text() == "b-e-1 started\n"
    finally:
        dep.teardown()


def test_teardown_deletes_the_namespace_waits_and_is_safe_twice(env: Any) -> None:
    e = env()
    dep = _deployed(e)
    e.api.terminating_polls = 3
    dep.teardown()
    assert e.api.deletes == [e.ns] and e.ns not in e.api.namespaces
    assert dep._forwards == {}
    dep.teardown()
    assert e.api.deletes == [e.ns]


def test_teardown_of_a_namespace_that_never_goes_reports_scotbed_down(env: Any) -> None:
    e = env()
    dep = _deployed(e)
    e.api.terminating_polls = 10_000
    with pytest.raises(BackendError, match=r"still terminating; `scotbed down --backend k8s k8stest-"):
        dep.teardown()


def test_down_all_deletes_only_scotbed_namespaces_optionally_of_one_run(env: Any) -> None:
    e = env()
    for name, labels in [
        ("scotbed-a", {MANAGED_BY: "scotbed", LABEL_RUN: "a"}),
        ("scotbed-b", {MANAGED_BY: "scotbed", LABEL_RUN: "b"}),
        ("default", {}),
        ("rendered-by-hand", {LABEL_RUN: "c"}),
    ]:
        e.api.create_namespace({"metadata": {"name": name, "labels": labels}})
    e.api.terminating_polls = 0
    assert down_all(run_id="b", kube=e.kube) == ["scotbed-b"]
    assert down_all(kube=e.kube) == ["scotbed-a"]
    assert sorted(e.api.namespaces) == ["default", "rendered-by-hand"]
    assert down_all(kube=e.kube) == []


# -- the workload Jobs ---------------------------------------------------------------------------------

SECURITY = {"runAsNonRoot": True, "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def _job(name: str, collect: bool = True) -> dict[str, Any]:
    template: dict[str, Any] = {
        "metadata": {"labels": {"app.kubernetes.io/component": name}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "locust",
                    "image": "scotbed-broker:test",
                    "command": ["locust", "--headless"],
                    "securityContext": SECURITY,
                    "volumeMounts": [{"name": "out", "mountPath": "/out"}],
                }
            ],
            "volumes": [{"name": "out", "emptyDir": {}}],
        },
    }
    if collect:
        template["metadata"]["annotations"] = {COLLECT_ANNOTATION: "/out"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": template},
    }


def _finish(api: FakeApi, ns: str, pod: str, code: int) -> None:
    p = api.pods[(ns, pod)]
    p.status.container_statuses = [
        terminated(cs.name, code) if cs.name != COLLECTOR else cs for cs in p.status.container_statuses
    ]


def _complete_on_marker(api: FakeApi, ns: str) -> Callable[[str], None]:
    """The collector exits once released; the Job controller then marks the Job."""

    def release(pod: str) -> None:
        p = api.pods[(ns, pod)]
        codes = [cs.state.terminated.exit_code for cs in p.status.container_statuses if cs.name != COLLECTOR]
        p.status.container_statuses = [
            terminated(cs.name, 0) if cs.name == COLLECTOR else cs for cs in p.status.container_statuses
        ]
        job = api.jobs[(ns, p.metadata.labels["job-name"])]
        ok = all(c == 0 for c in codes)
        job.status.conditions = [
            k.V1JobCondition(
                type="Complete" if ok else "Failed",
                status="True",
                reason=None if ok else "BackoffLimitExceeded",
                message=None if ok else "Job has reached the specified backoff limit",
            )
        ]

    return release


def test_workload_jobs_get_a_collector_and_their_files_land_in_the_run_directory(env: Any) -> None:
    e = env()
    dep = _deployed(e)
    try:
        e.streams.on_marker = _complete_on_marker(e.api, e.ns)
        config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "locust"}, "data": {"a": "b"}}

        def progress(now: float) -> None:
            for p in e.api.pods_in(e.ns):
                name = p.metadata.name
                if "job-name" in p.metadata.labels and now >= 5 and (name, COLLECTOR) not in e.streams.files:
                    e.streams.files[(name, COLLECTOR)] = {
                        f"/out/events/client-{name}.jsonl": b'{"ev": "receive"}\n',
                        f"/out/locust/{name}_stats.csv": b"Type,Name\n",
                    }
                    _finish(e.api, e.ns, name, 0)

        e.clock.ticks.append(progress)
        WorkloadJobs(dep).run([config, _job("locust-master"), _job("locust-worker")], timeout_s=120)
        run = e.request.run_dir
        assert (run / "events" / "client-locust-master-abcde.jsonl").read_text() == '{"ev": "receive"}\n'
        assert (run / "locust" / "locust-worker-abcde_stats.csv").is_file()
        created = {name: body for kind, name, body in e.api.created if kind == "Job"}
        containers = created["locust-master"]["spec"]["template"]["spec"]["containers"]
        assert [c["name"] for c in containers] == ["locust", COLLECTOR]
        assert containers[1]["securityContext"] == SECURITY
        assert containers[1]["volumeMounts"] == [{"name": "out", "mountPath": "/out"}]
        assert any(kind == "ConfigMap" and name == "locust" for kind, name, _ in e.api.created)
        markers = [c for _, _, c in e.streams.execs if c[-1].endswith(COLLECTED_MARKER)]
        assert len(markers) == 2
        assert (run / "manifests" / "workload.yaml").is_file()
    finally:
        dep.teardown()


def test_a_failed_workload_container_fails_the_jobs_with_its_log_but_its_files_are_kept(env: Any) -> None:
    e = env()
    dep = _deployed(e)
    try:
        e.streams.on_marker = _complete_on_marker(e.api, e.ns)
        master = "locust-master-abcde"
        e.api.logs[(master, "locust", False)] = "starting\nKeyError: 'broker'\n"

        def progress(now: float) -> None:
            if (master, COLLECTOR) not in e.streams.files:
                e.streams.files[(master, COLLECTOR)] = {"/out/locust/partial.csv": b"x\n"}
                _finish(e.api, e.ns, master, 1)

        e.clock.ticks.append(progress)
        with pytest.raises(BackendError) as err:
            WorkloadJobs(dep).run([_job("locust-master")], timeout_s=60)
        msg = str(err.value)
        assert "workload Jobs failed: locust-master: Failed: BackoffLimitExceeded" in msg
        assert f"{master}: container locust exited with code 1 (Error)" in msg and "KeyError: 'broker'" in msg
        assert (e.request.run_dir / "locust" / "partial.csv").read_text() == "x\n"
    finally:
        dep.teardown()


def test_a_workload_that_does_not_finish_times_out_naming_the_job_and_keeps_partial_files(env: Any) -> None:
    e = env()
    dep = _deployed(e)
    try:
        e.streams.files[("locust-master-abcde", COLLECTOR)] = {"/out/events/client-0.jsonl": b"{}\n"}
        with pytest.raises(BackendError, match=r"workload Jobs not finished after 30 s: locust-master"):
            WorkloadJobs(dep).run([_job("locust-master")], timeout_s=30)
        assert (e.request.run_dir / "events" / "client-0.jsonl").is_file()
        assert 30 <= e.clock.now < 40
    finally:
        dep.teardown()


def _locust_objects(run_id: str) -> list[dict[str, Any]]:
    from workload_plans import plan_for

    from scotbed import topology as T
    from scotbed.orchestrator.backends.k8s.render import run_labels
    from scotbed.workloads.k8s import render_locust

    scot = T.Scot(T.paper_fig2(), 2)
    addr = {b.id: f"{b.id}.brokers.ns.svc:50051" for b in scot.brokers}
    plan = plan_for({"subscribers": 4, "publishers": 1}, scot, addr, seed=1, run_id=run_id)
    return render_locust(plan, run_id, "scotbed-broker:test", workers=1, labels=run_labels(run_id))


def _play_locust(e: Any) -> None:
    """Every Locust pod writes an event log and its summary, exits 0 and is released by its collector."""
    from scotbed.workloads.k8s import RESULTS_DIR

    e.streams.on_marker = _complete_on_marker(e.api, e.ns)

    def progress(now: float) -> None:
        for p in e.api.pods_in(e.ns):
            name = p.metadata.name
            if "job-name" in p.metadata.labels and (name, COLLECTOR) not in e.streams.files:
                e.streams.files[(name, COLLECTOR)] = {f"{RESULTS_DIR}/events/{name}.jsonl": b"{}\n"}
                e.api.logs[(name, None, False)] = f"{name}: Locust summary\n"
                _finish(e.api, e.ns, name, 0)

    e.clock.ticks.append(progress)


def test_the_workload_renderers_jobs_are_collected_from_their_results_dir(env: Any) -> None:
    e = env()
    dep = _deployed(e)
    try:
        _play_locust(e)
        WorkloadJobs(dep).run(_locust_objects(e.run_id), timeout_s=60)
        pods = sorted(p.metadata.name for p in e.api.pods_in(e.ns) if "job-name" in p.metadata.labels)
        assert len(pods) == 2
        for pod in pods:
            assert (e.request.run_dir / "events" / f"{pod}.jsonl").read_text() == "{}\n"
            logs = list((e.request.run_dir / "logs").glob(f"{pod}-*.log"))
            assert len(logs) == 1 and "Locust summary" in logs[0].read_text()
    finally:
        dep.teardown()


def test_render_writes_the_workload_objects_a_run_applies(env: Any, tmp_path: Path) -> None:
    """`scotbed render --target k8s` shows the Locust ConfigMap, Service and Jobs exactly as the backend
    applies them (the run's manifests/workload.yaml), collector and namespace included."""
    from scotbed.orchestrator.backends.k8s.render import WORKLOAD_RELEASE, locust_jobs
    from scotbed.orchestrator.cli import main
    from scotbed.orchestrator.plan import workload_plan

    e = env()
    spec_file = tmp_path / "k8stest.yaml"
    spec_file.write_text(yaml.safe_dump(SPEC))
    image, workers, cpu = "scotbed-workloads:test", 3, "50m"
    options = ["--run-id", e.run_id, "--workload-image", image, "--workers", str(workers), "--pod-cpu", cpu]
    assert (
        main(["render", str(spec_file), "--target", "k8s", "--out", str(tmp_path / "render"), *options]) == 0
    )
    dep = _deployed(e)
    try:
        _play_locust(e)
        plan = workload_plan(
            e.spec, e.scot, dep.client_addresses, run_id=e.run_id, release_mode=WORKLOAD_RELEASE
        )
        WorkloadJobs(dep).run(locust_jobs(plan, e.run_id, image, workers, cpu), e.spec.timeouts.run_s)
    finally:
        dep.teardown()
    rendered = list(yaml.safe_load_all((tmp_path / "render" / "workload.yaml").read_text()))
    applied = list(yaml.safe_load_all((e.request.run_dir / "manifests" / "workload.yaml").read_text()))
    assert [o["kind"] for o in rendered] == ["ConfigMap", "Service", "Job", "Job"]
    assert rendered == applied
    assert {o["metadata"]["namespace"] for o in rendered} == {e.ns}
    worker = rendered[3]["spec"]
    assert worker["parallelism"] == workers
    locust, collector = worker["template"]["spec"]["containers"]
    assert (locust["image"], locust["resources"]["requests"]["cpu"]) == (image, cpu)
    assert collector["name"] == COLLECTOR


def test_collector_needs_the_annotated_directory_to_be_a_mount() -> None:
    job = _job("j")
    job["spec"]["template"]["metadata"]["annotations"][COLLECT_ANNOTATION] = "/elsewhere"
    with pytest.raises(ValueError, match="names no volume mount"):
        add_collector(job, 60)
    plain = _job("j", collect=False)
    assert add_collector(plain, 60) is plain


def test_collector_jobs_are_valid_kubernetes_objects_and_keep_the_restricted_context() -> None:
    import kubernetes_validate

    from scotbed.orchestrator.backends.k8s.render import KUBERNETES_VERSION
    from scotbed.workloads.k8s import RESULTS_DIR

    jobs = [o for o in _locust_objects("r-1") if o["kind"] == "Job"]
    assert jobs
    for job in jobs:
        out = add_collector(annotate_collect(job, RESULTS_DIR), 600)
        containers = out["spec"]["template"]["spec"]["containers"]
        assert [c["name"] for c in containers][-1] == COLLECTOR
        assert containers[-1]["securityContext"] == containers[0]["securityContext"]
        assert containers[-1]["securityContext"]["runAsNonRoot"] is True
        kubernetes_validate.validate(out, KUBERNETES_VERSION, strict=True)
    plain = _job("j", collect=False)
    assert annotate_collect(plain, "/not-mounted") is plain


def test_extract_refuses_escapes_links_and_overwrites(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in [("ok/a.jsonl", b"1"), ("../evil", b"2"), ("/abs", b"3"), ("keep.txt", b"new")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("link")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    buf.seek(0)
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "keep.txt").write_text("old")
    written, skipped = extract(buf, dest)
    assert written == [dest / "ok" / "a.jsonl"]
    assert len(skipped) == 4
    assert (dest / "keep.txt").read_text() == "old"
    assert not (tmp_path / "evil").exists() and not (dest / "link").exists()


# -- port-forward bridging -----------------------------------------------------------------------------


def test_forwarder_pipes_each_connection_to_its_own_stream_both_ways() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def echo() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                while data := conn.recv(4096):
                    conn.sendall(data.upper())

    threading.Thread(target=echo, daemon=True).start()
    opened: list[int] = []

    def connect() -> socket.socket:
        opened.append(1)
        return socket.create_connection(server.getsockname()[:2])

    fwd = Forwarder("b-a-0", connect).start()
    try:
        host, port = fwd.address.split(":")
        for word in (b"hello", b"again"):
            with socket.create_connection((host, int(port)), timeout=5) as c:
                c.sendall(word)
                assert c.recv(100) == word.upper()
        assert len(opened) == 2
    finally:
        fwd.close()
        stop.set()
        server.close()
    with pytest.raises(OSError), socket.create_connection((host, int(port)), timeout=1):
        pass


def test_forwarder_drops_a_connection_whose_stream_cannot_open() -> None:
    def refuse() -> socket.socket:
        raise ApiException(status=403, reason="Forbidden")

    fwd = Forwarder("b-a-0", refuse).start()
    try:
        host, port = fwd.address.split(":")
        with socket.create_connection((host, int(port)), timeout=5) as c:
            c.settimeout(5)
            assert c.recv(10) == b""
        assert fwd.errors == 1
    finally:
        fwd.close()


def test_a_port_forward_proxys_connection_reset_is_no_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kubernetes client's proxy thread of a forwarded connection the pod's side closed ends in
    ConnectionResetError (seen when a run's brokers stop): once a Forwarder started, that reaches no
    hook that prints a traceback; any other thread's exception still does."""
    printed: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: printed.append(args.thread.name))
    Forwarder("b-a-0", lambda: None).start().close()
    Forwarder("b-a-1", lambda: None).start().close()  # a second start wraps the hook once

    def fail(error: Exception) -> None:
        raise error

    for name, error in (
        (f"{PROXY_THREAD}: 50051", ConnectionResetError(104, "Connection reset by peer")),
        (f"{PROXY_THREAD}: 50051", BrokenPipeError(32, "Broken pipe")),
        (f"{PROXY_THREAD}: 50051", ValueError("a defect, not a closed connection")),
        ("worker", ConnectionResetError(104, "Connection reset by peer")),
    ):
        t = threading.Thread(target=fail, args=(error,), name=name)
        t.start()
        t.join()
    assert printed == [f"{PROXY_THREAD}: 50051", "worker"]


def test_a_poll_loops_status_is_passed_on_when_it_changes() -> None:
    seen: list[str] = []
    note = changes_only(seen.append)
    for text in [
        "0/3 broker pods Ready",
        "0/3 broker pods Ready",
        "2/3 broker pods Ready",
        "0/3 broker pods Ready",
    ]:
        note(text)
    assert seen == ["0/3 broker pods Ready", "2/3 broker pods Ready", "0/3 broker pods Ready"]


def test_run_namespace_keeps_the_random_suffix_under_any_prefix() -> None:
    rid = "a-very-long-experiment-name-for-a-campaign-20250101T000000-0123abcd"
    assert run_namespace(rid) == run_namespace(rid, "scotbed-")
    ns = run_namespace(rid, "lab-")
    assert len(ns) <= 63 and ns.startswith("lab-") and ns.endswith("-0123abcd")


@pytest.mark.parametrize("prefix", [[], ["--namespace-prefix", "lab-"]])
def test_run_and_render_name_the_same_namespace(prefix: list[str]) -> None:
    """`scotbed run --backend k8s` deploys into the namespace `scotbed render --target k8s` shows, with
    the default prefix (`scotbed-<run id>`) and with --namespace-prefix."""
    from scotbed.orchestrator.backends.k8s.render import namespace_for
    from scotbed.orchestrator.cli import build_parser
    from scotbed.orchestrator.progress import make_progress
    from scotbed.orchestrator.run import options_from_args

    rid = "quickstart-20250101T000000-0123abcd"
    parser = build_parser()
    run_args = parser.parse_args(["run", "s.yaml", "--backend", "k8s", *prefix])
    options = options_from_args(run_args)
    backend = K8sBackend.from_options(options, make_progress(quiet=True, log_json=False))
    render_args = parser.parse_args(["render", "s.yaml", "--target", "k8s", "--out", "o", *prefix])
    shown = namespace_for(rid, render_args.namespace_prefix)
    assert backend.addressing(rid).dial == broker_address("{id}", shown)
    assert shown == ("lab-" if prefix else "scotbed-") + rid.lower()


# -- end to end on a real cluster ----------------------------------------------------------------------

KUBE_CONTEXT = os.environ.get("SCOTBED_KUBE_CONTEXT")


@pytest.mark.k8s
@pytest.mark.skipif(not KUBE_CONTEXT, reason="SCOTBED_KUBE_CONTEXT is not set (no Kubernetes cluster)")
def test_three_brokers_on_a_real_cluster_become_healthy_through_port_forwards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scotbed.broker.health import check

    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    spec = parse_spec(
        {
            "name": "k8se2e",
            "topology": {"kind": "tree", "acyclic": {"kind": "path", "n": 3}},
            "routing": "flooding",
            "matching": "naive",
        }
    )
    scot = build_scot(spec)
    run_id = f"k8se2e-{uuid.uuid4().hex[:8]}"
    state = RunState(run_id, "k8s", str(tmp_path / "run"))
    image = os.environ.get("SCOTBED_IMAGE", "scotbed-broker:0.1.0")
    backend = K8sBackend(context=KUBE_CONTEXT, preferred_anti_affinity=True)
    configs = deployed_configs(spec, scot, backend.addressing(run_id), run_id)
    request = DeployRequest(
        run_id, tmp_path / "run", configs, ready_timeout_s=180, state=state, image=image,
        nodes_needed=scot.chromatic_need(),
    )  # fmt: skip
    dep = backend.deploy(request)
    try:
        for broker, address in dep.admin_addresses.items():
            ok, status = asyncio.run(check(address, timeout_s=10))
            assert ok, f"{broker} via {address}: {status}"
        assert dep.dead() == {}
        got = dep.collect(tmp_path / "run" / "events")
        assert sorted(p.name for p in got) == sorted(f"{b.id}.jsonl" for b in scot.brokers), (
            dep.collect_problems
        )
    finally:
        dep.teardown()
    assert down_all(context=KUBE_CONTEXT, run_id=run_id) == []


def _probe_pod(name: str, on_term: str, image: str) -> dict[str, Any]:
    """A pod on the real node whose shell does ``on_term`` at SIGTERM (grace 10 s)."""
    return {
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 10,
            "automountServiceAccountToken": False,
            "nodeSelector": {"scotbed.io/node-pool": "real"},
            "containers": [
                {
                    "name": "c",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": ["/bin/sh", "-c", f"trap '{on_term}' TERM; while true; do sleep 0.2; done"],
                }
            ],
        },
    }


def _wait_for(what: str, ok: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not ok():
        assert time.monotonic() < deadline, f"{what} within {timeout_s:g} s"
        time.sleep(0.3)


@pytest.mark.k8s
@pytest.mark.skipif(not KUBE_CONTEXT, reason="SCOTBED_KUBE_CONTEXT is not set (no Kubernetes cluster)")
def test_teardown_releases_a_finished_pod_at_once_and_never_forces_a_running_one() -> None:
    """The real API server removes a deleted pod whose container has exited on one grace-0 delete
    (the kubelet would wait for its sandbox GC); a pod still in its grace period stays. The kubelet
    sometimes removes the finished pod itself before it is seen finished: then a new pair tries."""
    kube = connect(KUBE_CONTEXT)
    image = os.environ.get("SCOTBED_IMAGE", "scotbed-broker:0.1.0")
    ns = f"scotbed-release-{uuid.uuid4().hex[:8]}"
    kube.core.create_namespace({"metadata": {"name": ns, "labels": {MANAGED_BY: "scotbed"}}})

    def phase(name: str) -> str | None:
        """The pod's phase; None once it is gone."""
        try:
            return kube.core.read_namespaced_pod(name, ns).status.phase
        except ApiException as e:
            if is_status(e, 404):
                return None
            raise

    try:
        for attempt in range(3):
            done, draining = f"done-{attempt}", f"draining-{attempt}"
            kube.core.create_namespaced_pod(ns, _probe_pod(done, "exit 0", image))
            kube.core.create_namespaced_pod(ns, _probe_pod(draining, "", image))
            _wait_for("both pods running", lambda: phase(done) == phase(draining) == "Running")  # noqa: B023
            for name in (draining, done):
                kube.core.delete_namespaced_pod(name, ns)
            _wait_for("the exited pod Succeeded or gone", lambda: phase(done) in ("Succeeded", None))  # noqa: B023
            if phase(done) is None:
                continue  # the kubelet was first
            released = release_finished_pods(kube, ns)
            if done not in released and phase(done) is None:
                continue  # the kubelet was first, between the read and the release
            assert done in released and draining not in released
            assert phase(done) is None
            still = kube.core.read_namespaced_pod(draining, ns)
            assert still.status.phase == "Running" and still.metadata.deletion_timestamp is not None
            break
        else:
            pytest.fail("the kubelet removed the finished pod before it was seen finished, three times")
    finally:
        assert delete_namespaces(kube, [ns]) == [ns]
