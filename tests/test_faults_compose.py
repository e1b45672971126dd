"""Faults on compose: the timeline's kill/stop/start as compose commands (against a scripted docker CLI),
the backends that take a timeline, and (marked docker) a broker killed and restarted mid-publish in a
real compose run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scotbed_cli import QUICKSTART, scotbed
from scripted_runner import Handler, ScriptedRunner, const

from scotbed.config import BrokerConfig
from scotbed.experiment.spec import SpecError, build_scot, parse_spec
from scotbed.orchestrator.backends import compose
from scotbed.orchestrator.backends.docker_engine import ComposeCLI, ComposeProject, DockerEngine
from scotbed.orchestrator.faults import validate

COMPOSE = ["docker-compose", "-f", "f.yml", "-p", "p"]


def _container(service: str, status: str, port: int) -> dict[str, Any]:
    return {
        "Id": f"{service}-0123456789abcdef",
        "State": {"Status": status, "ExitCode": 137 * (status == "exited"), "Health": {"Status": "healthy"}},
        "RestartCount": 0,
        "Config": {"Labels": {"com.docker.compose.service": service}},
        "NetworkSettings": {"Ports": {"50051/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(port)}]}},
    }


def test_kill_stop_and_restart_are_compose_commands_and_the_restarted_broker_is_alive_on_its_new_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(compose, "DEAD_POLL_S", 0.0)
    docs = [_container("b-a-0", "running", 40001), _container("b-b-0", "running", 40002)]

    def becomes(status: str, port: int) -> Handler:
        def handler(_argv: list[str]) -> tuple[int, str, str]:
            docs[1] = _container("b-b-0", status, port)  # what the engine would do to the container
            return 0, "", ""

        return handler

    runner = ScriptedRunner(
        [
            ([*COMPOSE, "kill"], becomes("exited", 40002)),
            ([*COMPOSE, "stop"], const(0)),
            ([*COMPOSE, "start"], becomes("running", 40009)),  # a new ephemeral host port
            ([*COMPOSE, "config", "--services"], const(0, "b-a-0\nb-b-0\n")),
            (["docker", "container", "ls"], const(0, "1\n2\n")),
            (["docker", "inspect"], lambda _a: (0, json.dumps(docs), "")),
            (["docker", "logs"], const(0, "bye\n")),
        ]
    )
    cli = ComposeCLI(("docker-compose",), "1.29.2", False)
    project = ComposeProject(DockerEngine(runner), cli, Path("f.yml"), "p")
    configs = [BrokerConfig(b, "v0", 0, "edge", "0.0.0.0:50051") for b in ("b-a-0", "b-b-0")]
    d = compose.ComposeDeployment(project, "r1", configs, ready_timeout_s=5.0)
    d.discover_ports()
    faults = d.fault_target
    faults.kill("b-b-0")
    assert set(d.dead()) == {"b-b-0"}
    faults.terminate("b-b-0")
    faults.start_broker("b-b-0")
    faults.wait_ready(["b-b-0"])
    assert d.dead() == {} and faults.address("b-b-0") == "127.0.0.1:40009"
    issued = [c[len(COMPOSE) :] for c in runner.calls if c[: len(COMPOSE)] == COMPOSE]
    issued = [c for c in issued if c[0] != "config"]
    assert issued == [["kill", "-s", "SIGKILL", "b-b-0"], ["stop", "-t", "10", "b-b-0"], ["start", "b-b-0"]]


def test_a_timeline_runs_on_local_compose_and_k8s_and_is_refused_elsewhere() -> None:
    spec = parse_spec(
        {
            "name": "x",
            "topology": {"kind": "tree", "connectivity": 1, "acyclic": {"kind": "path", "n": 3}},
            "routing": "rpf",
            "faults": [
                {"at_s": 1, "action": "kill", "broker": "b-v1-0"},
                {"at_s": 2, "action": "restart", "broker": "b-v1-0"},
            ],
        }
    )
    scot = build_scot(spec)
    for backend in ("local", "compose", "k8s"):
        validate(spec, scot, backend)
    with pytest.raises(
        SpecError, match="faults: injected on local and compose and k8s and sim only in this build, not x"
    ):
        validate(spec, scot, "x")


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(1500)
def test_a_broker_container_killed_and_restarted_mid_publish_loses_nothing_outside_the_window(
    tmp_path: Path, engine: DockerEngine
) -> None:
    if not (engine.image_exists("scotbed-broker:0.1.0") or engine.image_exists(compose.BASE_IMAGE_OFFLINE)):
        pytest.skip("no broker image and no offline base image: run `make image OFFLINE=1`")
    sets = [
        "topology.kind=tree",
        "topology.connectivity=1",
        "topology.acyclic={kind: path, n: 3}",
        "routing=rpf",
        "workload.placement=edge",
        "workload.subscribers=4",
        "workload.publishers=1",
        "workload.notifications_per_publisher=60",
        "workload.rate_per_minute=600",
        "timeouts.ready_s=300",
        "faults=[{at_s: 1.5, action: kill, broker: b-v1-0}, {at_s: 3.0, action: restart, broker: b-v1-0}]",
    ]
    flags = [a for s in sets for a in ("--set", s)]
    out = ["--out", str(tmp_path / "runs"), "--quiet"]
    proc = scotbed(tmp_path, "run", str(QUICKSTART), "--backend", "compose", *flags, *out, timeout=1400)
    (run,) = list((tmp_path / "runs").iterdir())
    assert proc.returncode == 0, proc.stderr[-3000:]
    done = [json.loads(line)["action"] for line in (run / "faults.jsonl").read_text().splitlines()]
    assert done == ["kill", "restart"]
    n = json.loads((run / "analysis" / "summary.json").read_text())["notifications"]
    assert n["missing"] == 0 and len(n["fault_windows"]) == 1
    assert n["delivered"] + n["missing_in_fault_windows"] == n["expected_deliveries"] > 0
