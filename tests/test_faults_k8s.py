"""Faults on k8s: kill/stop as pod deletes (grace 0 vs the pod's own), restart as the same Pod created
again once the old one is gone (against the in-memory API of test_k8s_backend), and (marked k8s) a
broker pod deleted and restarted mid-publish in a real `scotbed run --backend k8s`."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k
from test_k8s_backend import SPEC, Clock, FakeApi, FakeStreams, _not_found, ready_status
from test_k8s_e2e import assert_nothing_left, images, k8s_run

from scotbed import contract, topology
from scotbed.broker.client import BrokerClient
from scotbed.broker.launcher import LocalCluster
from scotbed.experiment.spec import build_scot, parse_spec
from scotbed.experiment.spec_faults import FaultSpec
from scotbed.orchestrator.backends.base import DeployRequest
from scotbed.orchestrator.backends.k8s.api import Kube
from scotbed.orchestrator.backends.k8s.backend import K8sBackend
from scotbed.orchestrator.backends.k8s.deployment import run_namespace
from scotbed.orchestrator.backends.k8s.faults import FromFirstPublication, K8sFaults
from scotbed.orchestrator.plan import deployed_configs
from scotbed.orchestrator.state import RunState

__all__ = ["images"]  # the broker and Locust images fixture, shared with test_k8s_e2e


class DeletingApi(FakeApi):
    """FakeApi plus pod reads and deletes; a deleted pod lingers for ``terminating_reads`` reads."""

    def __init__(self) -> None:
        super().__init__()
        self.pod_deletes: list[tuple[str, int | None]] = []
        self.terminating: dict[str, int] = {}
        self.terminating_reads = 2

    def delete_namespaced_pod(
        self, name: str, namespace: str, grace_period_seconds: int | None = None
    ) -> None:
        if (namespace, name) not in self.pods:
            raise _not_found(f'pods "{name}"')
        self.pod_deletes.append((name, grace_period_seconds))
        self.terminating[name] = self.terminating_reads

    def read_namespaced_pod(self, name: str, namespace: str) -> k.V1Pod:
        if name in self.terminating:
            self.terminating[name] -= 1
            if self.terminating[name] < 0:
                del self.terminating[name], self.pods[(namespace, name)]
        if (namespace, name) not in self.pods:
            raise _not_found(f'pods "{name}"')
        return self.pods[(namespace, name)]


def _deployed(tmp_path: Path) -> tuple[DeletingApi, Clock, Any]:
    api = DeletingApi()
    kube = Kube(api, api, api, FakeStreams(api), context="kind-scotbed")
    clock = Clock(api)
    backend = K8sBackend(kube=kube, clock=clock, sleep=clock.sleep, warn=lambda _t: None)
    spec = parse_spec(SPEC)
    scot = build_scot(spec)
    run_id = "k8sfaults-20250101T000000-0123abcd"
    request = DeployRequest(
        run_id,
        tmp_path / "run",
        deployed_configs(spec, scot, backend.addressing(run_id), run_id),
        ready_timeout_s=60,
        state=RunState(run_id, "k8s", str(tmp_path / "run")),
        image="scotbed-broker:test",
        nodes_needed=scot.chromatic_need(),
    )
    clock.ticks.append(lambda now: api.set_all(run_namespace(run_id), ready_status))
    return api, clock, backend.deploy(request)


def test_kill_and_stop_delete_the_pod_and_restart_creates_the_same_pod_once_the_old_one_is_gone(
    tmp_path: Path,
) -> None:
    api, _clock, dep = _deployed(tmp_path)
    try:
        faults = dep.fault_target
        assert isinstance(faults, K8sFaults)
        rendered = next(body for kind, name, body in api.created if kind == "Pod" and name == "b-a-0")
        faults.kill("b-a-0")
        faults.terminate("b-b-1")
        assert api.pod_deletes == [("b-a-0", 0), ("b-b-1", None)]
        created_before = len(api.created)
        faults.start_broker("b-a-0")
        assert "b-a-0" not in api.terminating  # the old pod was gone before the new one was created
        assert api.created[created_before:] == [("Pod", "b-a-0", rendered)]
        faults.wait_ready(["b-a-0"])  # the clock's tick marks the new pod Ready; b-b-1 is not waited for
        assert faults.address("b-a-0") == dep.admin_addresses["b-a-0"]
    finally:
        dep.teardown()


def test_a_pod_that_never_goes_fails_the_restart_naming_it(tmp_path: Path) -> None:
    api, _clock, dep = _deployed(tmp_path)
    try:
        faults = dep.fault_target
        assert isinstance(faults, K8sFaults)
        api.terminating_reads = 10**9
        faults.terminate("b-a-0")
        with pytest.raises(RuntimeError, match="pod b-a-0 still terminating after 60 s"):
            faults.start_broker("b-a-0")
    finally:
        dep.teardown()


def test_killing_a_pod_already_gone_is_not_an_error(tmp_path: Path) -> None:
    api, _clock, dep = _deployed(tmp_path)
    try:
        faults = dep.fault_target
        assert isinstance(faults, K8sFaults)
        del api.pods[(dep.namespace, "b-a-0")]
        faults.kill("b-a-0")
        assert api.pod_deletes == []
    finally:
        dep.teardown()


def test_the_k8s_timeline_starts_at_the_first_client_publication(tmp_path: Path) -> None:
    """Against real broker processes (a LocalCluster is a fault target too): nothing happens while no
    client has published; the kill comes ``at_s`` after the first publication a broker counted."""
    rows = [
        {"at_s": 0.3, "action": "kill", "broker": "b-v1-0"},
        {"at_s": 0.6, "action": "restart", "broker": "b-v1-0"},
    ]
    log = tmp_path / contract.FAULTS
    with LocalCluster.from_topology(topology.tree(topology.path(3)), tmp_path, routing="rpf") as c:
        injector = FromFirstPublication([FaultSpec.model_validate(r) for r in rows], c, tmp_path)
        injector.start()
        try:
            time.sleep(1.0)
            assert not log.exists() and injector.error is None
            published_ns = time.time_ns()

            async def publish() -> None:
                async with BrokerClient(c.address("b-v0-0")) as client:
                    await client.publish([("p1", {"price": 1})])

            asyncio.run(publish())
            deadline = time.monotonic() + 60
            while not log.exists() or len(log.read_text().splitlines()) < 2:
                assert time.monotonic() < deadline and injector.error is None, injector.error
                time.sleep(0.05)
        finally:
            injector.stop()
    kill, restart = [json.loads(line) for line in log.read_text().splitlines()]
    assert (kill["action"], restart["action"]) == ("kill", "restart")
    assert published_ns + 0.3e9 <= kill["start_ns"] < published_ns + 0.3e9 + 5e9
    assert restart["start_ns"] >= published_ns + 0.6e9  # times count from the release, not from each other


@pytest.mark.k8s
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(1500)
def test_a_broker_pod_deleted_and_restarted_mid_publish_loses_nothing_outside_the_window(
    tmp_path: Path, images: None
) -> None:
    sets = [
        "topology.kind=tree",
        "topology.connectivity=1",
        "topology.acyclic={kind: path, n: 3}",
        "routing=rpf",
        "workload.placement=edge",
        "workload.subscribers=4",
        "workload.publishers=1",
        "workload.notifications_per_publisher=200",
        "workload.rate_per_minute=600",
        "timeouts.ready_s=300",
        "faults=[{at_s: 2, action: kill, broker: b-v1-0}, {at_s: 4, action: restart, broker: b-v1-0}]",
    ]
    _proc, run = k8s_run(tmp_path, sets, "--quiet")
    done = [json.loads(line)["action"] for line in (run / "faults.jsonl").read_text().splitlines()]
    assert done == ["kill", "restart"]
    n = json.loads((run / "analysis" / "summary.json").read_text())["notifications"]
    assert n["missing"] == 0 and n["duplicates"] == 0 and len(n["fault_windows"]) == 1
    assert n["delivered"] + n["missing_in_fault_windows"] == n["expected_deliveries"] > 0
    assert_nothing_left(run.name)
