"""docker_engine's decisions (CLI detection, readiness, teardown checks) against a scripted runner;
the real engine is exercised in test_docker_image.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scripted_runner import Handler, ScriptedRunner, const

from scotbed.orchestrator.backends.docker_engine import (
    ComposeCLI,
    ComposeProject,
    ContainerState,
    DockerEngine,
    DockerError,
    EngineUnavailable,
    build_argv,
    project_name,
)


def container(service: str, status: str = "running", health: str | None = "healthy", **state: Any) -> dict:
    st: dict[str, Any] = {"Status": status, "ExitCode": state.get("exit_code", 0)}
    if health is not None:
        st["Health"] = {"Status": health, "Log": [{"Output": state.get("probe", "")}]}
    return {
        "Id": f"{service}-0123456789abcdef",
        "Name": f"/p_{service}_1",
        "State": st,
        "Config": {"Labels": {"com.docker.compose.service": service}},
        "NetworkSettings": {"Networks": {"p_overlay": {"IPAddress": f"10.0.0.{len(service)}"}}},
    }


def test_compose_cli_prefers_v2_plugin_and_falls_back_to_v1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCOTBED_COMPOSE", raising=False)
    v2 = ScriptedRunner([(["docker", "compose", "version"], const(0, "v2.29.1\n"))])
    assert DockerEngine(v2).compose_cli() == ComposeCLI(("docker", "compose"), "2.29.1", v2=True)

    v1 = ScriptedRunner(
        [
            (["docker", "compose"], const(1, "", "docker: 'compose' is not a docker command.")),
            (["docker-compose", "version"], const(0, "1.29.2\n")),
        ]
    )
    assert DockerEngine(v1).compose_cli() == ComposeCLI(("docker-compose",), "1.29.2", v2=False)

    none = ScriptedRunner([(["docker", "compose"], const(1)), (["docker-compose"], const(127))])
    with pytest.raises(DockerError, match="no compose CLI found"):
        DockerEngine(none).compose_cli()


def test_compose_override_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOTBED_COMPOSE", "docker-compose")
    r = ScriptedRunner([(["docker-compose", "version"], const(0, "1.29.2"))])
    assert DockerEngine(r).compose_cli().argv == ("docker-compose",)
    assert all(c[0] == "docker-compose" for c in r.calls)


def test_engine_check_explains_what_is_missing() -> None:
    assert (
        DockerEngine(ScriptedRunner([(["docker", "version"], const(0, "20.10.24\n"))])).check() == "20.10.24"
    )
    down = ScriptedRunner([(["docker", "version"], const(1, "", "Cannot connect to the Docker daemon"))])
    with pytest.raises(EngineUnavailable, match=r"Cannot connect.*start-dockerd\.sh"):
        DockerEngine(down).check()
    with pytest.raises(EngineUnavailable, match="no `docker` CLI"):
        DockerEngine(ScriptedRunner([(["docker"], const(127))])).check()


def test_offline_build_has_no_network_and_selects_the_wheelhouse() -> None:
    argv = build_argv(
        "img:1", context=".", dockerfile="broker-image/Dockerfile", base_image="b:1", wheelhouse=True
    )
    assert argv[:3] == ["docker", "build", "--force-rm"] and argv[-1] == "."
    joined = " ".join(argv)
    assert "--build-arg BASE_IMAGE=b:1" in joined
    assert "--build-arg WHEELHOUSE=1" in joined
    assert "--network none" in joined
    online = build_argv("img:1", context=".", dockerfile="broker-image/Dockerfile")
    assert "--network" not in online and not any(a.startswith("WHEELHOUSE") for a in online)


def test_offline_build_refuses_without_wheels(tmp_path: Path) -> None:
    engine = DockerEngine(ScriptedRunner([]))
    with pytest.raises(DockerError, match="build-wheelhouse"):
        engine.build_image("img:1", context=tmp_path, dockerfile="Dockerfile", wheelhouse=True)


def test_project_names_are_valid_for_both_compose_versions() -> None:
    assert (
        project_name("quickstart-20261121T101500-ab12cd34") == "scotbed-quickstart-20261121t101500-ab12cd34"
    )
    assert project_name("My Run!/x") == "scotbed-my-run-x"
    assert project_name("--") == "scotbed"


def test_container_state_from_inspect() -> None:
    s = ContainerState.from_inspect(container("b0", health="unhealthy", probe="b0:50051: UNAVAILABLE\n"))
    assert (s.service, s.status, s.health, s.health_log, s.ready) == (
        "b0",
        "running",
        "unhealthy",
        "b0:50051: UNAVAILABLE",
        False,
    )
    assert ContainerState.from_inspect(container("b1", health=None)).ready
    assert ContainerState.from_inspect(container("b2", status="exited", health=None)).stopped


def _project(docs_per_poll: list[list[dict]], services: list[str], **extra: Handler) -> ComposeProject:
    polls = iter(docs_per_poll)
    current: list[list[dict]] = [[]]

    def ls(_argv: list[str]) -> tuple[int, str, str]:
        current[0] = next(polls, current[0])
        return 0, "\n".join(d["Id"] for d in current[0]), ""

    def inspect(argv: list[str]) -> tuple[int, str, str]:
        return 0, json.dumps([d for d in current[0] if d["Id"] in argv]), ""

    handlers: list[tuple[list[str], Handler]] = [
        (["docker-compose", "-f", "c.yml", "-p", "p", "config"], const(0, "\n".join(services))),
        (["docker", "container", "ls"], ls),
        (["docker", "inspect"], inspect),
        (["docker", "logs"], const(0, "", "ConfigError: b1.routing: unknown algorithm")),
    ]
    handlers += [(cmd.split(" "), h) for cmd, h in extra.items()]
    return ComposeProject(
        DockerEngine(ScriptedRunner(handlers)),
        ComposeCLI(("docker-compose",), "1.29.2", False),
        Path("c.yml"),
        "p",
    )


def test_wait_healthy_polls_until_every_service_is_healthy() -> None:
    starting = [container("b0", health="starting"), container("b1", health="starting")]
    healthy = [container("b0"), container("b1")]
    seen: list[tuple[int, int]] = []
    p = _project([starting, [starting[0], healthy[1]], healthy], ["b0", "b1"])
    states = p.wait_healthy(5, poll_s=0.01, progress=lambda r, n: seen.append((r, n)))
    assert [s.service for s in states] == ["b0", "b1"]
    assert seen == [(0, 2), (1, 2), (2, 2)]
    assert p.service_ips() == {"b0": "10.0.0.2", "b1": "10.0.0.2"}


def test_wait_healthy_fails_fast_naming_a_stopped_broker_with_its_logs() -> None:
    p = _project(
        [[container("b0"), container("b1", status="exited", health="unhealthy", exit_code=2)]], ["b0", "b1"]
    )
    with pytest.raises(DockerError, match=r"(?s)b1 stopped \(exit 2\).*unknown algorithm"):
        p.wait_healthy(30, poll_s=0.01)


def test_wait_healthy_timeout_names_each_broker_that_is_not_ready() -> None:
    docs = [container("b0"), container("b1", health="unhealthy", probe="127.0.0.1:50051: UNAVAILABLE")]
    p = _project([docs], ["b0", "b1", "b2"])
    with pytest.raises(DockerError) as err:
        p.wait_healthy(0.05, poll_s=0.01)
    msg = str(err.value)
    assert "b1: running/unhealthy (127.0.0.1:50051: UNAVAILABLE)" in msg
    assert "b2: no container" in msg
    assert "b0:" not in msg


def test_down_removes_stragglers_by_label_and_reports_survivors() -> None:
    networks = iter(["p_overlay\n", "p_overlay\n", ""])
    p = _project(
        [[]],
        [],
        **{
            "docker-compose -f c.yml -p p down": const(0),
            "docker network ls": lambda _a: (0, next(networks), ""),
            "docker network rm": const(0),
            "docker volume ls": const(0, ""),
        },
    )
    p.down()
    runner = p.engine.run
    assert isinstance(runner, ScriptedRunner)
    down = next(c for c in runner.calls if "down" in c)
    assert down[-5:] == ["down", "-v", "--remove-orphans", "--timeout", "10"]
    assert ["docker", "network", "rm", "p_overlay"] in runner.calls

    stuck = _project(
        [[]],
        [],
        **{
            "docker-compose -f c.yml -p p down": const(0),
            "docker network ls": const(0, "p_overlay\n"),
            "docker network rm": const(1, "", "network has active endpoints"),
            "docker volume ls": const(0, ""),
        },
    )
    with pytest.raises(DockerError, match="left behind after down: networks: p_overlay"):
        stuck.down()
