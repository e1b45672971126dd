"""The broker image and a compose project on a real Docker engine (.ci/run starts one).

The image is built offline, as this machine has to: from the debootstrap base image
(scripts/build-base-image.sh) and the host's wheelhouse, with no network during the build.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from scotbed.broker.health import check as grpc_health
from scotbed.config import BrokerConfig, LogConfig, dump_all
from scotbed.orchestrator.backends.docker_engine import (
    IMAGE_UID,
    ComposeProject,
    DockerEngine,
    container_user,
    project_name,
)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
BASE_IMAGE = os.environ.get("SCOTBED_BASE_IMAGE", "scotbed-base:bookworm")
IMAGE = os.environ.get("SCOTBED_IMAGE", "scotbed-broker:0.1.0")
PORT = 50051


def docker(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=check)


@pytest.fixture(scope="module")
def image(engine: DockerEngine) -> str:
    if not engine.image_exists(BASE_IMAGE):
        pytest.skip(f"base image {BASE_IMAGE} is missing: run scripts/build-base-image.sh (.ci/run does)")
    if not any((ROOT / ".wheelhouse").glob("*.whl")):
        subprocess.run([str(ROOT / "scripts" / "build-wheelhouse.sh")], check=True, timeout=600)
    start = time.monotonic()
    engine.build_image(
        IMAGE,
        context=ROOT,
        dockerfile=ROOT / "broker-image" / "Dockerfile",
        base_image=BASE_IMAGE,
        wheelhouse=True,
        timeout_s=900,
    )
    print(f"built {IMAGE} offline in {time.monotonic() - start:.1f} s")
    return IMAGE


def _wait_container_healthy(cid: str, timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        doc = json.loads(docker("inspect", cid).stdout)[0]
        state = doc["State"]
        if state["Status"] != "running":
            pytest.fail(f"broker container stopped: {docker('logs', cid, check=False).stderr[-2000:]}")
        if state.get("Health", {}).get("Status") == "healthy":
            return doc
        if time.monotonic() > deadline:
            pytest.fail(f"not healthy after {timeout_s} s: {state.get('Health')}")
        time.sleep(0.5)


def _ip(doc: dict) -> str:
    return next(n["IPAddress"] for n in doc["NetworkSettings"]["Networks"].values() if n["IPAddress"])


def test_image_has_the_contract_and_only_the_broker_dependencies(image: str) -> None:
    cfg = json.loads(docker("image", "inspect", image).stdout)[0]["Config"]
    assert cfg["User"] == f"{IMAGE_UID}:{IMAGE_UID}"
    assert cfg["Entrypoint"] == ["python", "-m", "scotbed.broker"]
    assert cfg["Healthcheck"]["Test"][:4] == ["CMD", "python", "-m", "scotbed.broker.health"]
    probe = (
        "import importlib.util as u, scotbed.broker.health, grpc_health, grpc_reflection, prometheus_client; "
        "print([m for m in ('pyspark', 'locust', 'pydantic', 'kubernetes', 'docker', 'pandas', 'pip') "
        "if u.find_spec(m)])"
    )
    out = docker("run", "--rm", "--network", "none", "--entrypoint", "python", image, "-c", probe).stdout
    assert out.strip() == "[]"


def test_broker_container_serves_grpc_health_as_non_root_on_a_read_only_root(
    image: str, tmp_path: Path
) -> None:
    cfg = BrokerConfig(
        id="b0",
        vertex="v0",
        index=0,
        type="edge",
        listen=f"0.0.0.0:{PORT}",
        routing="flooding",
        matching="naive",
        log=LogConfig(path="/var/log/scotbed/b0.jsonl"),
    )
    config = tmp_path / "brokers.json"
    config.write_text(json.dumps(dump_all([cfg])))
    events = tmp_path / "events"
    user = container_user(events)
    name = f"scotbed-test-{uuid.uuid4().hex[:8]}"
    run = ["run", "-d", "--name", name, "--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL"]
    run += ["--security-opt", "no-new-privileges", *(["--user", user] if user else [])]
    run += ["-v", f"{config}:/etc/scotbed/brokers.json:ro", "-v", f"{events}:/var/log/scotbed"]
    cid = docker(*run, image, "--config", "/etc/scotbed/brokers.json", "--id", "b0").stdout.strip()
    try:
        doc = _wait_container_healthy(cid)
        assert doc["HostConfig"]["ReadonlyRootfs"] is True
        ok, status = asyncio.run(grpc_health(f"{_ip(doc)}:{PORT}", timeout_s=5))
        assert ok, status
        expected_uid = user.split(":")[0] if user else str(IMAGE_UID)
        assert docker("exec", cid, "id", "-u").stdout.strip() == expected_uid != "0"
        denied = docker("exec", cid, "touch", "/opt/scotbed/probe", check=False)
        assert denied.returncode != 0 and "Read-only file system" in denied.stderr
        docker("stop", "-t", "15", cid, timeout=60)
        assert json.loads(docker("inspect", cid).stdout)[0]["State"]["ExitCode"] == 0
        lines = (events / "b0.jsonl").read_text().splitlines()
        assert lines and all(json.loads(line)["node"] == "b0" for line in lines)
    finally:
        docker("rm", "-f", "-v", cid, check=False)


def test_three_broker_compose_project_comes_up_healthy_and_leaves_nothing(
    engine: DockerEngine, image: str, tmp_path: Path
) -> None:
    from scotbed.experiment.spec import build_scot, parse_spec
    from scotbed.orchestrator.plan import deployed_configs
    from scotbed.orchestrator.render import write_compose
    from scotbed.orchestrator.render.compose import addressing, render_compose

    run_id = f"dockertest-{uuid.uuid4().hex[:8]}"
    spec = parse_spec(
        {
            "name": "dockertest",
            "topology": {"kind": "tree", "acyclic": {"kind": "path", "n": 3}},
            "routing": "flooding",
            "matching": "naive",
        }
    )
    scot = build_scot(spec)
    user = container_user(tmp_path / "events")
    configs = deployed_configs(spec, scot, addressing(PORT), run_id)
    doc = render_compose(configs, run_id, image=image, port=PORT, user=user)
    file = write_compose(tmp_path, doc, configs)
    project = ComposeProject(engine, engine.compose_cli(), file, project_name(run_id))
    try:
        start = time.monotonic()
        project.up(timeout_s=180)
        states = project.wait_healthy(120)
        print(f"{len(states)} brokers healthy in {time.monotonic() - start:.1f} s ({project.cli.argv})")
        assert sorted(s.service for s in states) == sorted(b.id for b in scot.brokers)
        ips = project.service_ips()
        for broker, ip in ips.items():
            ok, status = asyncio.run(grpc_health(f"{ip}:{PORT}", timeout_s=5))
            assert ok, f"{broker}: {status}"
    finally:
        project.down()
    assert not engine.resources(project.project)
    labelled = docker("ps", "-a", "-q", "--filter", f"label=scotbed.io/run-id={run_id}").stdout.split()
    networks = docker("network", "ls", "-q", "--filter", f"label=scotbed.io/run-id={run_id}").stdout.split()
    assert labelled == [] and networks == []
    assert sorted(p.name for p in (tmp_path / "events").iterdir()) == sorted(
        f"{b.id}.jsonl" for b in scot.brokers
    )
