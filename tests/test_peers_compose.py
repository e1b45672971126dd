"""Peers on the compose backend: the rendered project (one service per peer from the broker image, the
peer module as entrypoint, run file and event logs on bind mounts), and (marked docker) a real
``scotbed run --backend compose`` of a small peers spec: every interested peer gets every event
exactly once, the logs land in the run directory and nothing labelled with the run is left."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from scotbed import contract
from scotbed.orchestrator.backends import compose_peers
from scotbed.orchestrator.backends.compose import RUN_LABEL
from scotbed.orchestrator.backends.docker_engine import DockerEngine
from scotbed.orchestrator.images import BROKER_IMAGE
from scotbed.orchestrator.progress import QuietProgress
from scotbed.orchestrator.render import compose as render
from scotbed.orchestrator.run import RunOptions, RunResult, run_spec

IMAGE = os.environ.get("SCOTBED_IMAGE", BROKER_IMAGE)


def test_each_peer_is_a_service_of_the_broker_image_running_the_peer_module(tmp_path: Path) -> None:
    launcher = compose_peers.ComposePeerLauncher("r1", "img:1")
    places = launcher.places(tmp_path, [0, 3])
    assert places[3] == compose_peers.PeerPlace(
        f"peer-3:{render.DEFAULT_PORT}", f"0.0.0.0:{render.DEFAULT_PORT}", f"{render.EVENTS_DIR}/peer-3.jsonl"
    )
    doc = compose_peers.render_peers([0, 3], "r1", "img:1", "../peers.json", "../events", None)
    assert sorted(doc["services"]) == ["peer-0", "peer-3"]
    svc = doc["services"]["peer-3"]
    assert svc["image"] == "img:1" and svc["hostname"] == "peer-3"
    assert svc["entrypoint"] == [
        "python", "-m", "scotbed.vinifera.process", "--run-file", compose_peers.RUN_FILE_PATH, "--name", "3"
    ]  # fmt: skip
    assert svc["volumes"] == [
        f"../peers.json:{compose_peers.RUN_FILE_PATH}:ro",
        f"../events:{render.EVENTS_DIR}",
    ]
    assert svc["ports"] == [f"127.0.0.1::{render.DEFAULT_PORT}"] and "user" not in svc
    assert svc["labels"][RUN_LABEL] == "r1" and doc["networks"][render.NETWORK]["labels"] == {RUN_LABEL: "r1"}


def leftovers(run_id: str) -> list[str]:
    out = []
    for kind in ("container", "network", "volume"):
        argv = ["docker", kind, "ls", "-q", "--filter", f"label={RUN_LABEL}={run_id}"]
        if kind == "container":
            argv.insert(3, "-a")
        out += [f"{kind} {x}" for x in subprocess.run(argv, capture_output=True, text=True).stdout.split()]
    return out


def run_on_compose(engine: DockerEngine, tmp_path: Path, **workload: object) -> RunResult:
    """``scotbed run --backend compose`` of 6 peers (state files under ``tmp_path``)."""
    if not engine.image_exists(IMAGE):
        pytest.skip(f"no broker image {IMAGE}: run `make image OFFLINE=1`")
    doc = {
        "name": "v",
        "seed": 4,
        "topology": {"kind": "peers", "n": 6},
        "routing": "vinifera",
        "routing_params": {"k_sw": 1, "k_f": 1},
        "timeouts": {"ready_s": 300},
        "workload": {"peers": {"width": 0.3, "warmup_rounds": 15, "events_per_round": 4, **workload}},
    }
    path = tmp_path / "peers.yaml"
    path.write_text(yaml.safe_dump(doc))
    opts = RunOptions(backend="compose", out=tmp_path / "runs", quiet=True, image=IMAGE)
    return run_spec(path, [], opts, QuietProgress())


@pytest.mark.docker
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_scotbed_run_of_peers_on_compose(
    engine: DockerEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    result = run_on_compose(engine, tmp_path, rounds=3)
    assert result.ok, result.verdict
    p = json.loads((result.run_dir / contract.SUMMARY).read_text())["peers"]
    assert (p["events"], p["hit_ratio"], p["missed"], p["extra_deliveries"]) == (12, 1.0, 0, 0)
    run_file = json.loads((result.run_dir / "peers.json").read_text())
    assert {q["address"] for q in run_file["peers"]} == {f"peer-{k}:{render.DEFAULT_PORT}" for k in range(6)}
    logs = sorted(f.name for f in (result.run_dir / contract.EVENTS_DIR).iterdir())
    assert logs == sorted(Path(contract.events_file(contract.peer_node(k))).name for k in range(6))
    compose_file = yaml.safe_load(
        (result.run_dir / contract.MANIFESTS_DIR / "docker-compose.yml").read_text()
    )
    assert sorted(compose_file["services"]) == [contract.peer_node(k) for k in range(6)]
    assert leftovers(result.run_id) == []
    assert not list((tmp_path / "state").glob("*.json"))


@pytest.mark.docker
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_peer_failure_on_compose_kills_its_container(
    engine: DockerEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Churn: every 2 rounds one peer's container gets SIGKILL; no event is delivered twice."""
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    result = run_on_compose(engine, tmp_path, rounds=5, churn={"every": 2, "leaves": 1})
    assert result.ok, result.verdict
    faults = [json.loads(line) for line in (result.run_dir / contract.FAULTS).read_text().splitlines()]
    assert [f["kind"] for f in faults] == ["kill", "kill"] and len({f["peer"] for f in faults}) == 2
    p = json.loads((result.run_dir / contract.SUMMARY).read_text())["peers"]
    assert (p["events"], p["extra_deliveries"]) == (20, 0)
    assert leftovers(result.run_id) == []
