"""The compose backend: its decisions against a scripted docker CLI, the top-level docker-compose.yml
against a fresh render, and (marked docker) `scotbed run --backend compose` and `scotbed down`
on the real engine."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from scotbed_cli import scotbed
from scripted_runner import ScriptedRunner, const
from test_tls import health_status

from scotbed.broker import tls
from scotbed.config import BrokerConfig
from scotbed.experiment.spec import Spec, build_scot, load_spec
from scotbed.orchestrator import plan as deploy_plan
from scotbed.orchestrator.backends import compose
from scotbed.orchestrator.backends.base import BackendError, DeployRequest
from scotbed.orchestrator.backends.docker_engine import (
    ComposeCLI,
    ComposeProject,
    DockerEngine,
    DockerError,
)
from scotbed.orchestrator.render import compose_standalone, write_brokers_json
from scotbed.orchestrator.state import RunState
from scotbed.workloads import plan_json

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "experiments" / "quickstart.yaml"
RUN_LABEL = "scotbed.io/run-id"


def container(service: str, status: str = "running", exit_code: int = 0, restarts: int = 0) -> dict[str, Any]:
    return {
        "Id": f"{service}-0123456789abcdef",
        "State": {"Status": status, "ExitCode": exit_code, "Health": {"Status": "healthy", "Log": []}},
        "RestartCount": restarts,
        "Config": {"Labels": {"com.docker.compose.service": service}},
        "NetworkSettings": {
            "Ports": {"50051/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(40000 + len(service))}]}
        },
    }


@pytest.fixture(scope="module")
def spec() -> Spec:
    return load_spec(QUICKSTART, [])


def request_for(spec: Spec, tmp_path: Path) -> DeployRequest:
    scot = build_scot(spec)
    configs = deploy_plan.deployed_configs(spec, scot, compose.ComposeBackend().addressing("r1"), "r1")
    return DeployRequest("r1", tmp_path, configs, 30.0, RunState("r1", "compose", str(tmp_path)))


# --- rendering a run ----------------------------------------------------------------------------


def test_render_and_run_write_the_same_compose_configs(spec: Spec, tmp_path: Path) -> None:
    """`scotbed render --target compose` and a compose run render the configs one way."""
    from scotbed.orchestrator.cli import main

    assert (
        main(["render", str(QUICKSTART), "--target", "compose", "--out", str(tmp_path), "--run-id", "r1"])
        == 0
    )
    run = write_brokers_json(tmp_path / "run.json", request_for(spec, tmp_path / "run").configs)
    assert (tmp_path / "brokers.json").read_text() == run.read_text()
    assert len(json.loads(run.read_text())["brokers"]) == 18


def test_run_configs_dial_service_names_and_log_into_the_bind_mount(spec: Spec, tmp_path: Path) -> None:
    request = request_for(spec, tmp_path)
    doc = compose.render_run(request, user="1000:1000")
    assert list(doc["services"]) == [c.id for c in request.configs]
    for after in request.configs:
        assert after.listen == "0.0.0.0:50051"
        assert after.log.path == f"/var/log/scotbed/{after.id}.jsonl"
        assert [n.address for n in after.neighbours] == [f"{n.id}:50051" for n in after.neighbours]
        assert after.routing == "snr"
        svc = doc["services"][after.id]
        # reachable from the host on loopback only, at a port the engine picks
        assert svc["ports"] == ["127.0.0.1::50051"]
        assert "../events:/var/log/scotbed" in svc["volumes"]
        assert "./brokers.json:/etc/scotbed/brokers.json:ro" in svc["volumes"]
        assert svc["user"] == "1000:1000"
        assert svc["labels"][RUN_LABEL] == "r1"


def test_published_ports_read_from_inspect() -> None:
    docs = [container("b-a-0"), container("b-b-10")]
    docs.append({"Config": {"Labels": {"com.docker.compose.service": "x"}}, "NetworkSettings": {"Ports": {}}})
    assert compose.published_ports(docs) == {"b-a-0": 40005, "b-b-10": 40006}


def deployment(runner: ScriptedRunner, brokers: list[str]) -> compose.ComposeDeployment:
    engine = DockerEngine(runner)
    project = ComposeProject(engine, ComposeCLI(("docker-compose",), "1.29.2", False), Path("f.yml"), "p")
    configs = [BrokerConfig(b, "v0", 0, "edge", "0.0.0.0:50051") for b in brokers]
    return compose.ComposeDeployment(project, "r1", configs, ready_timeout_s=5.0)


def test_dead_names_exited_and_restarted_brokers_with_their_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compose, "DEAD_POLL_S", 0.0)
    docs = [container("b-a-0"), container("b-b-0", "exited", 137), container("b-c-0", restarts=1)]
    runner = ScriptedRunner(
        [
            (["docker", "container", "ls"], const(0, "1\n2\n3\n")),
            (["docker", "inspect"], lambda _a: (0, json.dumps(docs), "")),
            (["docker", "logs"], lambda a: (0, f"last words of {a[-1][:5]}\n", "")),
        ]
    )
    d = deployment(runner, ["b-a-0", "b-b-0", "b-c-0"])
    dead = d.dead()
    assert set(dead) == {"b-b-0", "b-c-0"}
    assert dead["b-b-0"].startswith("exited with code 137") and "last words of b-b-0" in dead["b-b-0"]
    assert dead["b-c-0"].startswith("restarted 1 time(s)")
    # a dead broker stays dead even if docker stops reporting it
    docs[:] = [container("b-a-0")]
    assert set(d.dead()) == {"b-b-0", "b-c-0"}


def test_dead_is_rate_limited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compose, "DEAD_POLL_S", 60.0)
    runner = ScriptedRunner(
        [
            (["docker", "container", "ls"], const(0, "1\n")),
            (["docker", "inspect"], const(0, json.dumps([container("b-a-0")]))),
        ]
    )
    d = deployment(runner, ["b-a-0"])
    for _ in range(20):
        assert d.dead() == {}
    assert sum(c[:2] == ["docker", "inspect"] for c in runner.calls) == 1


def test_collect_checks_every_broker_wrote_a_log(tmp_path: Path) -> None:
    d = deployment(ScriptedRunner([]), ["b-a-0", "b-b-0"])
    (tmp_path / "b-a-0.jsonl").write_text("{}\n")
    with pytest.raises(BackendError, match=r"no event log .* for b-b-0"):
        d.collect(tmp_path)
    (tmp_path / "b-b-0.jsonl").write_text("{}\n")
    assert d.collect(tmp_path) == [tmp_path / "b-a-0.jsonl", tmp_path / "b-b-0.jsonl"]


def test_teardown_fails_naming_what_carries_the_run_id(tmp_path: Path) -> None:
    runner = ScriptedRunner(
        [
            (["docker-compose"], const(0)),
            (
                ["docker", "container", "ls", "-a", "-q", "--filter", f"label={RUN_LABEL}=r1"],
                const(0, "abc\n"),
            ),
            (["docker", "container", "ls"], const(0)),
            (["docker", "network", "ls"], const(0)),
            (["docker", "volume", "ls"], const(0)),
        ]
    )
    d = deployment(runner, ["b-a-0"])
    with pytest.raises(BackendError, match="left behind after down: containers: abc"):
        d.teardown()
    assert runner.calls[0][:8] == [
        "docker-compose",
        "-f",
        "f.yml",
        "-p",
        "p",
        "down",
        "-v",
        "--remove-orphans",
    ]


def test_deploy_that_never_gets_healthy_names_the_broker_with_its_logs_and_tears_down(
    spec: Spec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("SCOTBED_COMPOSE", raising=False)
    down: list[bool] = []

    def compose_cmd(argv: list[str]) -> tuple[int, str, str]:
        if "down" in argv:
            down.append(True)
        return 0, "b-a-0\nb-b-0\n" if "config" in argv else "", ""

    docs = [container("b-a-0"), container("b-b-0")]
    docs[1]["State"]["Health"]["Status"] = "starting"
    runner = ScriptedRunner(
        [
            (["docker", "version"], const(0, "20.10.24\n")),
            (["docker", "compose"], const(1, "", "not a docker command")),
            (["docker-compose", "version"], const(0, "1.29.2\n")),
            (["docker-compose", "-f"], compose_cmd),
            (["docker", "image", "inspect"], const(0)),
            (["docker", "container", "ls"], lambda _a: (0, "" if down else "1\n2\n", "")),
            (["docker", "inspect"], lambda _a: (0, json.dumps(docs), "")),
            (["docker", "logs"], const(0, "", "bind: address already in use\n")),
            (["docker", "network", "ls"], const(0)),
            (["docker", "volume", "ls"], const(0)),
        ]
    )
    request = request_for(spec, tmp_path)
    request.ready_timeout_s = 0.0
    backend = compose.ComposeBackend(engine=DockerEngine(runner))
    with pytest.raises(BackendError) as failed:
        backend.deploy(request)
    message = str(failed.value)
    assert "b-b-0: running/starting" in message and "b-a-0:" not in message
    assert "b-b-0 last log lines:\nbind: address already in use" in message
    assert down, "a failed deploy must take its project down"
    # recorded before `up`, so `scotbed down` finds it even if this process had died
    saved = json.loads(request.state.path.read_text())
    assert saved["compose_project"] == compose.project_name("r1")
    assert saved["compose_file"] == str(tmp_path / "manifests" / "docker-compose.yml")
    assert (tmp_path / "manifests" / "brokers.json").is_file()


# --- the image --------------------------------------------------------------------------------


def test_missing_image_is_built_offline_when_the_debootstrap_base_exists(tmp_path: Path) -> None:
    (tmp_path / "broker-image").mkdir()
    (tmp_path / "broker-image" / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / ".wheelhouse").mkdir()
    (tmp_path / ".wheelhouse" / "x-1-py3-none-any.whl").write_text("")
    runner = ScriptedRunner(
        [
            (["docker", "image", "inspect", "img:1"], const(1)),
            (["docker", "image", "inspect", compose.BASE_IMAGE_OFFLINE], const(0)),
            (["docker", "build"], const(0)),
            (["docker", "image", "prune"], const(0)),
        ]
    )
    compose.ensure_image(DockerEngine(runner), "img:1", root=tmp_path)
    build = next(c for c in runner.calls if c[:2] == ["docker", "build"])
    assert f"BASE_IMAGE={compose.BASE_IMAGE_OFFLINE}" in build and "WHEELHOUSE=1" in build
    assert build[build.index("--network") + 1] == "none"


def test_failed_build_names_the_make_command(tmp_path: Path) -> None:
    (tmp_path / "broker-image").mkdir()
    (tmp_path / "broker-image" / "Dockerfile").write_text("FROM scratch\n")
    runner = ScriptedRunner(
        [
            (["docker", "image", "inspect"], const(1)),
            (["docker", "build"], const(1, "", "pull access denied for python")),
        ]
    )
    with pytest.raises(BackendError, match=r"`make image IMAGE=img:1` in a scotbed checkout"):
        compose.ensure_image(DockerEngine(runner), "img:1", root=tmp_path)
    built = [c for c in runner.calls if c[:2] == ["docker", "build"]]
    assert len(built) == 1 and not any("BASE_IMAGE" in a for a in built[0])  # the official base


# --- scotbed down -------------------------------------------------------------------------------


def test_sweep_removes_only_projects_no_state_file_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path))
    st = RunState("kept", "compose", str(tmp_path), compose_project="scotbed-kept")
    st.save()
    labels = "com.docker.compose.project={},scotbed.io/run-id=x\n"
    networks = {"n1"}  # the orphan project's network, until removed

    def network_rm(argv: list[str]) -> tuple[int, str, str]:
        networks.difference_update(argv[3:])
        return 0, "", ""

    runner = ScriptedRunner(
        [
            (["docker", "version"], const(0, "20.10\n")),
            (["docker", "container", "ls", "-a", "--filter"], const(0, labels.format("scotbed-kept"))),
            (["docker", "network", "ls", "--filter"], const(0, labels.format("scotbed-orphan"))),
            (["docker", "container", "ls"], const(0)),
            (["docker", "network", "ls", "-q"], lambda _a: (0, "\n".join(networks), "")),
            (["docker", "volume", "ls"], const(0)),
            (["docker", "network", "rm"], network_rm),
        ]
    )
    assert compose.sweep(None, DockerEngine(runner)) == ["scotbed-orphan"]
    assert ["docker", "network", "rm", "n1"] in runner.calls
    # the recorded run's project was not even looked at for removal
    assert not any("com.docker.compose.project=scotbed-kept" in a for c in runner.calls for a in c)


def test_sweep_without_an_engine_has_nothing_to_remove() -> None:
    runner = ScriptedRunner([(["docker", "version"], const(127, "", "No such file"))])
    assert compose.sweep(None, DockerEngine(runner)) == []


# --- the top-level docker-compose.yml -------------------------------------------------------------


def test_top_level_compose_file_is_in_sync_with_the_renderer(spec: Spec, tmp_path: Path) -> None:
    """Re-render as `scotbed render experiments/quickstart.yaml --target compose --standalone --out .`
    does and compare every file; on a difference, run that command and commit the result."""
    compose_standalone.write_standalone(spec, build_scot(spec), tmp_path, "experiments/quickstart.yaml")
    rendered = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert rendered == [
        Path("compose/quickstart/brokers.json"),
        Path("compose/quickstart/locustfile.py"),
        Path("compose/quickstart/plan.json"),
        Path("compose/quickstart/topology.json"),
        Path("docker-compose.yml"),
    ]
    stale = [str(p) for p in rendered if (ROOT / p).read_text() != (tmp_path / p).read_text()]
    assert not stale, f"out of date: {stale}; run the render command in this test's docstring"


def test_standalone_file_runs_the_workload_against_service_names(spec: Spec) -> None:
    doc = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    scot = build_scot(spec)
    brokers = {b.id for b in scot.brokers}
    services = doc["services"]
    assert set(services) == brokers | {"locust-master", "locust-worker"}
    assert set(services["locust-master"]["depends_on"]) == brokers
    assert all(c["condition"] == "service_healthy" for c in services["locust-master"]["depends_on"].values())
    assert services["locust-worker"]["command"][:3] == ["--worker", "--master-host", "locust-master"]
    # one image, buildable from the repository by any service compose happens to start first
    assert {s["image"] for s in services.values()} == {compose_standalone.IMAGE}
    assert all(s["build"]["args"]["EXTRAS"] == "broker,workloads" for s in services.values())
    plan = plan_json.load(ROOT / "compose" / "quickstart" / "plan.json")
    assert {b.address for b in plan.brokers} == {f"{b}:50051" for b in brokers}
    assert plan.release.mode == "auto"
    assert len(plan.subscribers) == spec.workload.subscribers
    configs = json.loads((ROOT / "compose" / "quickstart" / "brokers.json").read_text())["brokers"]
    assert {c["log"]["path"] for c in configs} == {f"/var/log/scotbed/events/{b}.jsonl" for b in brokers}


# --- the real engine ----------------------------------------------------------------------------


def compose_argv(engine: DockerEngine) -> list[str]:
    try:
        return list(engine.compose_cli().argv)
    except DockerError as err:
        pytest.skip(str(err))


@pytest.mark.docker
def test_compose_accepts_the_standalone_file(engine: DockerEngine) -> None:
    done = subprocess.run(
        [*compose_argv(engine), "-f", str(ROOT / "docker-compose.yml"), "config", "--services"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "locust-master" in done.stdout.split() and "b-a-0" in done.stdout.split()


def kept_containers(run_id: str) -> list[str]:
    argv = ["docker", "container", "ls", "-q", "--filter", f"label={RUN_LABEL}={run_id}"]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()


def leftovers(run_id: str) -> list[str]:
    out = []
    for kind in ("container", "network", "volume"):
        argv = ["docker", kind, "ls", "-q", "--filter", f"label={RUN_LABEL}={run_id}"]
        if kind == "container":
            argv.insert(3, "-a")
        out += [f"{kind} {x}" for x in subprocess.run(argv, capture_output=True, text=True).stdout.split()]
    return out


# The 7-broker tree over mutual TLS: the one compose run of the suite (faults_compose runs one in plaintext)
SMALL_TLS = [
    "--set", "workload.subscribers=10", "--set", "workload.publishers=2",
    "--set", "workload.notifications_per_publisher=50",
    "--set", "routing=rpf", "--set", "topology.kind=tree", "--set", "topology.connectivity=1",
    "--set", "topology.acyclic={kind: kary, fanout: 2, depth: 2}",
    "--set", "security.tls=true",
    "--set", "timeouts.ready_s=300",  # containers start on a machine others share (60 s: flaky)
]  # fmt: skip
TREE_BROKERS = 7


@pytest.fixture
def broker_image(engine: DockerEngine) -> None:
    if not engine.image_exists("scotbed-broker:0.1.0") and not engine.image_exists(
        compose.BASE_IMAGE_OFFLINE
    ):
        pytest.skip("no broker image and no offline base image: run `make image OFFLINE=1`")


def only_run(out: Path) -> Path:
    runs = list(out.iterdir())
    assert len(runs) == 1, runs
    return runs[0]


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_scotbed_run_on_compose_over_tls_end_to_end_and_down_removes_the_kept_project(
    tmp_path: Path, broker_image: None
) -> None:
    """`scotbed run --backend compose --keep` over mutual TLS delivers exactly once and leaves its
    containers and state file; `scotbed down RUN_ID` removes both."""
    start = time.monotonic()
    done = scotbed(tmp_path, "run", str(QUICKSTART), "--backend", "compose", *SMALL_TLS, "--keep",
                   "--out", str(tmp_path / "runs"), "--log-json", timeout=900)  # fmt: skip
    print(f"compose e2e took {time.monotonic() - start:.0f} s")
    run_dir = only_run(tmp_path / "runs")
    run_id = run_dir.name
    try:
        assert done.returncode == 0, done.stderr[-4000:]
        n = json.loads((run_dir / "analysis" / "summary.json").read_text())["notifications"]
        assert (n["missing"], n["duplicates"], n["false_positives"]) == (0, 0, 0)
        assert n["delivered"] == n["expected_deliveries"] > 0
        brokers = sorted(p.name.removesuffix(".jsonl") for p in (run_dir / "events").glob("b-*.jsonl"))
        assert len(brokers) == TREE_BROKERS
        assert sorted(p.stem for p in (run_dir / "tls").glob("*.pem")) == sorted([*brokers, "ca", "client"])
        assert (run_dir / "manifests" / "docker-compose.yml").is_file()
        assert len([x for x in leftovers(run_id) if x.startswith("container")]) == TREE_BROKERS
        assert (tmp_path / "state" / f"{run_id}.json").is_file()
        # the kept brokers serve over mutual TLS only: the run's client certificate, never plaintext
        ports = compose.published_ports(DockerEngine().inspect(kept_containers(run_id)))
        assert sorted(ports) == brokers
        address = f"127.0.0.1:{ports[brokers[0]]}"
        client = tls.client_credentials(run_dir / "tls")
        assert asyncio.run(health_status(address, client)) == "SERVING"
        assert asyncio.run(health_status(address, None)) == "UNAVAILABLE"
        # with the run id: a bare `down` would also sweep other people's projects on a shared engine
        down = scotbed(tmp_path, "down", "--backend", "compose", run_id)
        assert down.returncode == 0, down.stdout + down.stderr
        assert f"compose project {compose.project_name(run_id)}: down -v" in down.stdout
        assert leftovers(run_id) == []
        assert not list((tmp_path / "state").glob("*.json"))
    finally:
        scotbed(tmp_path, "down", run_id)
