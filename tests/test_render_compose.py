"""The compose file (checked by a real `docker compose config`) and the local process plan."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from scotbed import contract
from scotbed.config import load
from scotbed.experiment.spec import build_scot, parse_spec
from scotbed.orchestrator.backends.docker_engine import DockerEngine, DockerError
from scotbed.orchestrator.plan import deployed_configs
from scotbed.orchestrator.render import compose, write_compose

RUN_ID = "quickstart-20250102T030405-0a1b2c3d"
SPEC = parse_spec({"name": "quickstart"})
SCOT = build_scot(SPEC)


CONFIGS = deployed_configs(SPEC, SCOT, compose.addressing(), RUN_ID)


def rendered(tmp_path: Path, **kw: Any) -> Path:
    return write_compose(tmp_path, compose.render_compose(CONFIGS, RUN_ID, **kw), CONFIGS)


@pytest.mark.docker  # the compose CLI (.ci/run installs docker-compose); no engine needed
@pytest.mark.slow
def test_compose_config_accepts_the_file(tmp_path: Path) -> None:
    try:
        cmd = list(DockerEngine().compose_cli().argv)
    except DockerError as err:
        pytest.skip(str(err))
    path = rendered(tmp_path, user="1000:1000")
    out = subprocess.run(
        [*cmd, "-f", str(path), "-p", "scotbed-test", "config"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    normalised = yaml.safe_load(out.stdout)
    assert set(normalised["services"]) == set(SCOT.by_id)
    svc = normalised["services"]["b-a-0"]
    assert svc["healthcheck"]["test"] == ["CMD", "cat", contract.BROKER_READY_FILE]
    # a broken file is rejected, so the check above means something
    broken = yaml.safe_load(path.read_text())
    broken["services"]["b-a-0"]["healthcheck"]["retries"] = "often"
    path.write_text(yaml.safe_dump(broken))
    bad = subprocess.run(
        [*cmd, "-f", str(path), "-p", "scotbed-test", "config", "-q"],
        capture_output=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert bad.returncode != 0


def test_services_network_volumes_limits(tmp_path: Path) -> None:
    path = rendered(tmp_path, image="reg/b:1", port=6000)
    doc = yaml.safe_load(path.read_text())
    assert "version" not in doc
    assert set(doc["services"]) == set(SCOT.by_id)
    for b in SCOT.brokers:
        svc = doc["services"][b.id]
        assert svc["image"] == "reg/b:1" and svc["hostname"] == b.id
        assert svc["command"][-2:] == ["--id", b.id]
        assert svc["networks"] == [compose.NETWORK]
        assert "./brokers.json:/etc/scotbed/brokers.json:ro" in svc["volumes"]
        assert f"./events:{compose.EVENTS_DIR}" in svc["volumes"]
        # the probe reads the file the broker keeps while it serves: no process of its own per probe
        assert svc["healthcheck"]["test"] == ["CMD", "cat", contract.BROKER_READY_FILE]
        ready = contract.BROKER_READY_FILE
        assert svc["command"][:4] == ["--config", compose.CONFIG_PATH, "--ready-file", ready]
        assert svc["deploy"]["resources"]["limits"]["memory"] == svc["mem_limit"]
        assert float(svc["deploy"]["resources"]["limits"]["cpus"]) == svc["cpus"]
        assert svc["read_only"] is True and svc["cap_drop"] == ["ALL"]
        assert svc["labels"]["scotbed.io/run-id"] == RUN_ID
    assert (tmp_path / "events").is_dir()


def test_brokers_json_next_to_the_compose_file(tmp_path: Path) -> None:
    rendered(tmp_path)
    cfg = load(tmp_path / "brokers.json", "b-c-1")
    assert cfg.listen == f"0.0.0.0:{compose.DEFAULT_PORT}"
    assert {n.address for n in cfg.neighbours} == {f"{n.id}:{compose.DEFAULT_PORT}" for n in cfg.neighbours}
    assert cfg.log.path == f"{compose.EVENTS_DIR}/b-c-1.jsonl"
    assert len(json.loads((tmp_path / "brokers.json").read_text())["brokers"]) == 18


def test_extra_services_join_the_network() -> None:
    doc = compose.render_compose(CONFIGS, RUN_ID, extra_services={"locust": {"image": "locust"}})
    assert doc["services"]["locust"] == {"networks": [compose.NETWORK], "image": "locust"}
