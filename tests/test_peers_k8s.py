"""Peers on k8s: the rendered objects (one pod per peer from the broker image running the peer module,
anti-affinity against every other peer, a headless Service for the peers' DNS names, the run file in a
ConfigMap; all valid against the official schemas), and (marked k8s) a real ``scotbed run --backend
k8s`` of 6 peers with one peer failure, kept with ``--keep`` and removed by ``scotbed down``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from scotbed_cli import scotbed
from test_faults_k8s import DeletingApi
from test_k8s_backend import Clock, FakeStreams, ready_status
from test_k8s_e2e import KUBE_CONTEXT, assert_nothing_left, images, k8s_run, run_pods

from scotbed import contract
from scotbed.orchestrator.backends.k8s import render as k8s
from scotbed.orchestrator.backends.k8s import render_peers as k8s_peers
from scotbed.orchestrator.backends.k8s.api import Kube, connect
from scotbed.orchestrator.backends.k8s.backend import K8sBackend
from scotbed.orchestrator.backends.k8s.deployment import run_namespace
from scotbed.orchestrator.backends.k8s.peers import K8sPeerLauncher
from scotbed.orchestrator.run import RunOptions
from scotbed.orchestrator.state import RunState

__all__ = ["images"]  # the broker and Locust images fixture of test_k8s_e2e

RUN_ID = "v-20250102T030405-0a1b2c3d"
PEERS = 6


def _rendered(preferred: bool = False) -> list[dict]:
    names = list(range(PEERS))
    return k8s_peers.render_peers(
        names, '{"peers": []}', RUN_ID, "ns1", image="img:1", preferred_anti_affinity=preferred
    )


@pytest.mark.parametrize("preferred", [False, True])
def test_every_peer_object_passes_the_official_schema(preferred: bool) -> None:
    objects = _rendered(preferred)
    kinds = [o["kind"] for o in objects]
    assert kinds == ["Namespace", "ConfigMap", "Service", "NetworkPolicy"] + ["Pod"] * PEERS
    for version in sorted({k8s.KUBERNETES_VERSION, kubernetes_validate.latest_version()}):
        for obj in objects:
            kubernetes_validate.validate(obj, version, strict=True)


def test_each_peer_pod_runs_the_peer_module_and_avoids_every_other_peer() -> None:
    objects = _rendered()
    pods = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod"}
    assert sorted(pods) == sorted(contract.peer_node(n) for n in range(PEERS))
    spec = pods["peer-3"]["spec"]
    assert (spec["hostname"], spec["subdomain"], spec["restartPolicy"]) == ("peer-3", "peers", "Never")
    (c,) = spec["containers"]
    assert c["image"] == "img:1"
    assert c["command"] == [
        "python", "-m", "scotbed.vinifera.process", "--run-file", "/etc/scotbed/peers.json", "--name", "3"
    ]  # fmt: skip
    (term,) = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    run, peers = term["labelSelector"]["matchExpressions"]
    assert run["values"] == [RUN_ID] and sorted(peers["values"]) == [
        "peer-0",
        "peer-1",
        "peer-2",
        "peer-4",
        "peer-5",
    ]
    assert pods["peer-3"]["metadata"]["labels"][peers["key"]] == "peer-3"
    (service,) = [o for o in objects if o["kind"] == "Service"]
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"]
    assert all(service["spec"]["selector"].items() <= p["metadata"]["labels"].items() for p in pods.values())
    (config,) = [o for o in objects if o["kind"] == "ConfigMap"]
    assert config["data"] == {"peers.json": '{"peers": []}'}


def test_the_launcher_places_peers_at_their_dns_names_with_logs_in_the_events_dir(tmp_path: Path) -> None:
    launcher = K8sPeerLauncher(K8sBackend(), RUN_ID, "img:1", RunState(RUN_ID, "k8s", str(tmp_path)), 60)
    places = launcher.places(tmp_path, [0, 3])
    ns = run_namespace(RUN_ID, None)
    assert places[3].address == f"peer-3.peers.{ns}.svc:{k8s.DEFAULT_PORT}"
    assert (places[3].bind, places[3].log) == (f"0.0.0.0:{k8s.DEFAULT_PORT}", "/var/log/scotbed/peer-3.jsonl")


class EmptyDirGoesWithItsPod(FakeStreams):
    """A pod being deleted has no files left to copy."""

    def exec_to(
        self, namespace: str, pod: str, container: str, command: list[str], out: Any, timeout_s: float
    ) -> tuple[int | None, str]:
        assert isinstance(self.api, DeletingApi)
        if pod in self.api.terminating:
            return 1, f"pod {pod} is terminating"
        return super().exec_to(namespace, pod, container, command, out, timeout_s)


def test_the_launcher_copies_a_killed_peers_log_before_deleting_its_pod_and_all_logs_at_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against the in-memory API of test_k8s_backend: objects applied in order with the namespace in the
    run state, a port-forward per peer, a kill = copy the log out then delete with grace 0, stop =
    copy the other logs then delete the namespace (once)."""
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    api = DeletingApi()
    streams = EmptyDirGoesWithItsPod(api)
    clock = Clock(api)
    backend = K8sBackend(kube=Kube(api, api, api, streams, context="c"), clock=clock, sleep=clock.sleep)
    state = RunState(RUN_ID, "k8s", str(tmp_path))
    launcher = K8sPeerLauncher(backend, RUN_ID, "img:1", state, 60)
    ns = launcher.namespace
    clock.ticks.append(lambda _now: api.set_all(ns, ready_status))
    launcher.places(tmp_path, [0, 1, 2])
    (tmp_path / "peers.json").write_text('{"peers": []}')
    addresses = launcher.start(tmp_path, tmp_path / "peers.json")
    try:
        assert [kind for kind, _, _ in api.created] == [
            "Namespace",
            "ConfigMap",
            "Service",
            "NetworkPolicy",
        ] + ["Pod"] * 3
        assert (state.k8s_namespace, state.k8s_context) == (ns, "c")
        assert sorted(addresses) == [0, 1, 2] and all(a.startswith("127.0.0.1:") for a in addresses.values())
        for n in range(3):
            streams.files[(f"peer-{n}", "peer")] = {k8s_peers.peer_log(n): f"log {n}\n".encode()}
        launcher.kill(1)
        assert api.pod_deletes == [("peer-1", 0)]
        assert [pod for pod, _, _ in streams.execs] == ["peer-1"]  # copied before the delete
        assert (tmp_path / contract.EVENTS_DIR / "peer-1.jsonl").read_text() == "log 1\n"
    finally:
        launcher.stop()
        launcher.stop()
    assert [pod for pod, _, _ in streams.execs] == ["peer-1", "peer-0", "peer-2"] and api.deletes == [ns]
    assert sorted(f.name for f in (tmp_path / contract.EVENTS_DIR).iterdir()) == [
        "peer-0.jsonl",
        "peer-1.jsonl",
        "peer-2.jsonl",
    ]


@pytest.mark.k8s
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_scotbed_run_of_peers_on_k8s(tmp_path: Path, images: None) -> None:
    """6 peer pods on the real kubelet, one killed at round 3 of 4 (its log copied out first): every
    event before the kill reaches every interested peer once, none is delivered twice; ``--keep``
    leaves the namespace, ``scotbed down`` removes it."""
    doc = {
        "name": "v",
        "seed": 4,
        "topology": {"kind": "peers", "n": PEERS},
        "routing": "vinifera",
        "routing_params": {"k_sw": 1, "k_f": 1},
        "timeouts": {"ready_s": 300},
        "workload": {
            "peers": {
                "width": 0.3,
                "warmup_rounds": 15,
                "rounds": 4,
                "events_per_round": 4,
                "churn": {"every": 3},
            }
        },
    }
    spec = tmp_path / "peers.yaml"
    spec.write_text(yaml.safe_dump(doc))
    start = time.monotonic()
    _proc, run = k8s_run(tmp_path, [], "--quiet", "--keep", spec=spec, timeout=500)
    print(f"k8s peers run took {time.monotonic() - start:.0f} s")
    summary = json.loads((run / contract.SUMMARY).read_text())
    p = summary["peers"]
    assert (summary["failed"], p["events"], p["extra_deliveries"]) == (1, 16, 0), summary["verdict"]
    (fault,) = [json.loads(line) for line in (run / contract.FAULTS).read_text().splitlines()]
    # a fault's round is the first round the killed peer misses
    before = [h for r, h in p["hit_ratio_by_round"].items() if int(r) < fault["round"]]
    assert before == [1.0, 1.0, 1.0], p["hit_ratio_by_round"]  # the 3 rounds before the kill: all hits
    killed = fault["peer"]
    logs = sorted(f.name for f in (run / contract.EVENTS_DIR).iterdir())
    assert logs == sorted(Path(contract.events_file(contract.peer_node(k))).name for k in range(PEERS))
    assert (run / contract.EVENTS_DIR / f"{killed}.jsonl").stat().st_size > 0  # copied out before the kill
    ns = run_namespace(run.name, RunOptions().namespace_prefix)
    run_file = json.loads((run / "peers.json").read_text())
    assert {q["address"] for q in run_file["peers"]} == {k8s_peers.peer_address(k, ns) for k in range(PEERS)}
    alive = {contract.peer_node(k) for k in range(PEERS)} - {killed}
    assert {pod.metadata.name for pod in run_pods(connect(KUBE_CONTEXT), run.name)} == alive  # --keep
    assert all("READY" in (run / "logs" / f"{peer}.log").read_text() for peer in alive)
    down = scotbed(tmp_path, "down", "--backend", "k8s", run.name)
    assert down.returncode == 0 and f"namespace {ns}: deleted" in down.stdout, down.stdout + down.stderr
    assert_nothing_left(run.name)
    assert not list((tmp_path / "state").glob("*.json"))
