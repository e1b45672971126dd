"""The k8s backend against a real Kubernetes: the local cluster (`make local-cluster`, .ci/run) or any
context named by SCOTBED_KUBE_CONTEXT.

- placement: an 18-broker SCOT on the fake nodes with required anti-affinity; where every pod went
  is read back from the API (the scheduler's decision, not scotbed's rendering);
- too few nodes: the ready barrier names the Pending pods and the scheduler's reason; `scotbed down`
  removes the namespace it kept;
- a whole `scotbed run --backend k8s` over mutual TLS on the real kubelet, logs collected through the API;
- Ctrl-C during that run: exit 130, namespace removed, run directory kept.

:func:`k8s_run` is the one set-up of a whole run on the cluster (here, test_faults_k8s,
test_peers_k8s).

The fake nodes (scripts/local-cluster/fake_nodes.py) carry the taint ``scotbed.io/fake-node`` and
the label ``scotbed.io/node-pool=fake``; every two of them share a ``scotbed.io/fake-pair`` label.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from scotbed_cli import scotbed

from scotbed.experiment.spec import build_scot, parse_spec
from scotbed.orchestrator.backends.base import BackendError, DeployRequest
from scotbed.orchestrator.backends.docker_engine import DockerEngine
from scotbed.orchestrator.backends.k8s import render_tls as k8s_tls
from scotbed.orchestrator.backends.k8s.api import Kube, connect
from scotbed.orchestrator.backends.k8s.backend import K8sBackend
from scotbed.orchestrator.backends.k8s.placement import Placement
from scotbed.orchestrator.backends.k8s.render import LABEL_BROKER, LABEL_RUN
from scotbed.orchestrator.plan import deployed_configs
from scotbed.orchestrator.state import RunState

pytestmark = [pytest.mark.k8s, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "experiments" / "quickstart.yaml"
KUBE_CONTEXT = os.environ.get("SCOTBED_KUBE_CONTEXT")
BROKER_IMAGE = os.environ.get("SCOTBED_IMAGE", "scotbed-broker:0.1.0")
WORKLOAD_IMAGE = os.environ.get("SCOTBED_WORKLOAD_IMAGE", "scotbed-workloads:0.1.0")
FAKE_TAINT = "scotbed.io/fake-node"
FAKE_POOL = Placement(
    node_selector={"scotbed.io/node-pool": "fake"},
    tolerations=[{"key": FAKE_TAINT, "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
)
# a small workload: the run checks correctness, not throughput, and the real node has 2 cores
SMALL = [
    "workload.subscribers=10", "workload.publishers=2", "workload.notifications_per_publisher=50",
    "timeouts.ready_s=300",  # every pod starts on one node, on a machine others share
]  # fmt: skip
# the quickstart's paper-fig2 with two brokers per cluster (12, the least SNR runs on): one real node
# runs every pod and a Python per readiness probe; the 18-broker overlay is placed on the fake nodes
ONE_NODE = ["topology.connectivity=2"]
BROKERS_ON_ONE_NODE = 12
K8S_RUN = ["--backend", "k8s", "--preferred-anti-affinity", "--pod-cpu", "50m", "--workers", "1"]


def set_flags(sets: Sequence[str]) -> list[str]:
    return [a for s in sets for a in ("--set", s)]


def k8s_run(
    tmp_path: Path, sets: Sequence[str], *flags: str, spec: Path = QUICKSTART, timeout: float = 1400
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`scotbed run SPEC` on the real cluster (``K8S_RUN``, the context) with ``--set`` overrides into
    ``tmp_path/runs``, state in ``tmp_path/state``; asserts exit 0; returns the process and the run
    directory."""
    if not KUBE_CONTEXT:
        pytest.skip("SCOTBED_KUBE_CONTEXT is not set (make local-cluster, then export it)")
    ctx, out = ["--kube-context", KUBE_CONTEXT], ["--out", str(tmp_path / "runs")]
    proc = scotbed(
        tmp_path, "run", str(spec), *K8S_RUN, *ctx, *set_flags(sets), *out, *flags, timeout=timeout
    )
    runs = list((tmp_path / "runs").iterdir()) if (tmp_path / "runs").is_dir() else []
    assert proc.returncode == 0 and len(runs) == 1, proc.stdout[-3000:] + proc.stderr[-4000:]
    return proc, runs[0]


def assert_nothing_left(run_id: str) -> None:
    """No namespace and no pod of the run on the cluster."""
    kube = connect(KUBE_CONTEXT)
    assert run_namespaces(kube, run_id) == [] and run_pods(kube, run_id) == []


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run state (scotbed down's records) in the test's tmp_path, for this process and its children."""
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture(scope="module")
def kube() -> Kube:
    if not KUBE_CONTEXT:
        pytest.skip("SCOTBED_KUBE_CONTEXT is not set (make local-cluster, then export it)")
    return connect(KUBE_CONTEXT)


@pytest.fixture(scope="module")
def images(engine: DockerEngine) -> None:
    """The broker and Locust images from this working tree, built offline (cached layers)."""
    for extra in ([], ["EXTRAS=broker,workloads", f"IMAGE={WORKLOAD_IMAGE}"]):
        done = subprocess.run(
            ["make", "image", "OFFLINE=1", *extra], cwd=ROOT, capture_output=True, text=True, timeout=1200
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert engine.image_exists(BROKER_IMAGE) and engine.image_exists(WORKLOAD_IMAGE)


def phase_seconds(log_json: str) -> dict[str, float]:
    """Each finished phase's duration from `scotbed run --log-json` output; a line may go on with
    another thread's stderr text after its JSON object (a port-forward thread's traceback was seen)."""
    out, decoder = {}, json.JSONDecoder()
    for line in log_json.splitlines():
        if line.startswith("{"):
            doc, _ = decoder.raw_decode(line)
            if doc.get("event") == "phase_done":
                out[doc["phase"]] = doc["seconds"]
    return out


def run_namespaces(kube: Kube, run_id: str) -> list[str]:
    return [n.metadata.name for n in kube.core.list_namespace(label_selector=f"{LABEL_RUN}={run_id}").items]


def run_pods(kube: Kube, run_id: str) -> list[Any]:
    return kube.core.list_pod_for_all_namespaces(label_selector=f"{LABEL_RUN}={run_id}").items


def quickstart_scot() -> tuple[Any, Any]:
    spec = parse_spec({"name": "k8splace", "topology": {"acyclic": "paper-fig2", "connectivity": 3}})
    return spec, build_scot(spec)


def deploy_request(tmp_path: Path, backend: K8sBackend, spec_name: str, timeout_s: float) -> DeployRequest:
    spec, scot = quickstart_scot()
    run_id = f"{spec_name}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    state = RunState(run_id, "k8s", str(tmp_path / "run"))
    configs = deployed_configs(spec, scot, backend.addressing(run_id), run_id)
    return DeployRequest(
        run_id, tmp_path / "run", configs, ready_timeout_s=timeout_s, state=state, image=BROKER_IMAGE,
        nodes_needed=scot.chromatic_need(),
    )  # fmt: skip


# -- placement on the fake nodes -----------------------------------------------------------------------


def test_required_anti_affinity_places_no_two_neighbours_on_one_node(kube: Kube, tmp_path: Path) -> None:
    _, scot = quickstart_scot()
    assert len(scot.brokers) >= 18
    backend = K8sBackend(context=KUBE_CONTEXT, placement=FAKE_POOL)
    request = deploy_request(tmp_path, backend, "k8splace", 180)
    dep = backend.deploy(request)
    try:
        pods = {p.metadata.labels[LABEL_BROKER]: p for p in run_pods(kube, request.run_id)}
        assert sorted(pods) == sorted(b.id for b in scot.brokers)
        nodes = {b: p.spec.node_name for b, p in pods.items()}
        fake = {
            n.metadata.name for n in kube.core.list_node(label_selector="scotbed.io/node-pool=fake").items
        }
        assert set(nodes.values()) <= fake, nodes  # every pod bound, and only to the pool
        for b in scot.brokers:
            shared = [n.id for n in scot.neighbours(b.id) if nodes[n.id] == nodes[b.id]]
            assert shared == [], f"{b.id} shares node {nodes[b.id]} with its neighbours {shared}"
        assert len(set(nodes.values())) >= scot.chromatic_need()
    finally:
        dep.teardown()
    assert run_namespaces(kube, request.run_id) == []


def test_too_few_nodes_fail_the_ready_barrier_with_the_schedulers_reason(kube: Kube, tmp_path: Path) -> None:
    _, scot = quickstart_scot()
    two_nodes = Placement({**FAKE_POOL.node_selector, "scotbed.io/fake-pair": "p0"}, FAKE_POOL.tolerations)
    assert scot.chromatic_need() > 2
    backend = K8sBackend(context=KUBE_CONTEXT, placement=two_nodes, keep_on_failure=True)
    request = deploy_request(tmp_path, backend, "k8sfew", 20)  # the scheduler decides in seconds
    with pytest.raises(BackendError) as err:
        backend.deploy(request)
    text = str(err.value)
    pending = [p.metadata.name for p in run_pods(kube, request.run_id) if p.status.phase == "Pending"]
    assert pending, "with 2 nodes for a 3-colour overlay some broker must stay Pending"
    for name in pending:
        assert name in text
    assert "didn't match pod anti-affinity rules" in text  # the scheduler's own words
    assert "2 node(s) <" in text  # scotbed's hint counts the placement's nodes only
    down = scotbed(tmp_path, "down", "--backend", "k8s", request.run_id)
    assert down.returncode == 0, down.stdout + down.stderr
    assert run_namespaces(kube, request.run_id) == []


# -- whole runs on the real kubelet --------------------------------------------------------------------


@pytest.mark.timeout(1500)
def test_scotbed_run_on_the_real_kubelet_over_tls_end_to_end(
    kube: Kube, images: None, tmp_path: Path
) -> None:
    """The suite's one whole k8s run in its default shape, over mutual TLS: the certificates are one
    Secret every broker and workload pod mounts (test_faults_k8s runs one in plaintext)."""
    start = time.monotonic()
    done, run_dir = k8s_run(tmp_path, [*SMALL, *ONE_NODE, "security.tls=true"], "--log-json", timeout=1200)
    print(f"k8s e2e took {time.monotonic() - start:.0f} s; phases: {phase_seconds(done.stderr)}")
    assert f"secretName: {k8s_tls.SECRET}" in (run_dir / "manifests" / "k8s.yaml").read_text()
    workload = (run_dir / "manifests" / "workload.yaml").read_text()
    assert workload.count(f"secretName: {k8s_tls.SECRET}") >= 2
    n = json.loads((run_dir / "analysis" / "summary.json").read_text())["notifications"]
    assert (n["missing"], n["duplicates"], n["false_positives"]) == (0, 0, 0)
    assert n["delivered"] == n["expected_deliveries"] > 0
    assert len(list((run_dir / "events").glob("b-*.jsonl"))) == BROKERS_ON_ONE_NODE
    # container logs read through the API server from the kubelet
    broker_logs = list((run_dir / "logs").glob("b-*.log"))
    assert len(broker_logs) == BROKERS_ON_ONE_NODE and all("READY" in p.read_text() for p in broker_logs)
    master_logs = list((run_dir / "logs").glob("*-locust-master.log"))
    assert master_logs and master_logs[0].stat().st_size > 0
    assert_nothing_left(run_dir.name)


@pytest.mark.timeout(900)
def test_ctrl_c_during_a_k8s_run_exits_130_and_removes_the_namespace(
    kube: Kube, images: None, tmp_path: Path
) -> None:
    argv = [sys.executable, "-m", "scotbed.orchestrator.cli", "run", str(QUICKSTART), *K8S_RUN,
            "--kube-context", str(KUBE_CONTEXT), *set_flags([*SMALL, *ONE_NODE]),
            "--out", str(tmp_path / "runs")]  # fmt: skip
    log = tmp_path / "run.log"  # a file, not a pipe: nobody reads while it runs
    with log.open("w") as sink:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, text=True,
                                preexec_fn=_default_sigint)  # fmt: skip
        try:
            run_id = _wait_for_running_brokers(kube, tmp_path / "runs", proc, 600)
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, log.read_text()[-3000:]
    assert (tmp_path / "runs" / run_id).is_dir()
    assert run_namespaces(kube, run_id) == []


def _default_sigint() -> None:
    """A child of a background job starts with SIGINT ignored (POSIX); Ctrl-C must reach it here."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_running_brokers(kube: Kube, runs: Path, proc: subprocess.Popen[str], timeout_s: float) -> str:
    """The run id once some of its broker pods run (the deploy is under way)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"scotbed run ended early ({proc.returncode})"
        dirs = list(runs.iterdir()) if runs.is_dir() else []
        if dirs:
            run_id = dirs[0].name
            if any(p.status.phase == "Running" for p in run_pods(kube, run_id)):
                return run_id
        time.sleep(1)
    raise AssertionError(f"no broker pod running after {timeout_s:.0f} s")


def test_cpu_requests_are_fitted_to_the_real_cluster_only_when_the_defaults_do_not_fit(kube: Kube) -> None:
    """Against the real API server: a few brokers keep the default request; more brokers than the
    schedulable nodes' free CPU can take at 100m get one smaller request, applied to the brokers."""
    few = K8sBackend(kube=kube, workload_pods=0)
    few.fit_cpu_requests(kube, 1)
    assert few.pod_cpu is None and few.resources.cpu_request == "100m"
    many = K8sBackend(kube=kube, workload_pods=2)
    many.fit_cpu_requests(kube, 1000)  # 100 CPUs at the default: more than this cluster's nodes offer
    assert many.pod_cpu is not None and many.resources.cpu_request == many.pod_cpu
    assert int(many.pod_cpu.removesuffix("m")) < 100
