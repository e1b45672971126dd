"""`scotbed saturate` end to end on real brokers: a slow and a fast rate through capacity-limited links."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

SPEC = """
name: sat
seed: 5
topology: {kind: tree, acyclic: {kind: path, n: 3}}
links: {capacity_msgs_per_s: 20}
routing: flooding
matching: counting
workload:
  schema: gryphon
  gryphon: {attributes: 4, values: 2, dont_care: 1.0, subscriptions_per_client: 1}
  subscribers: 3
  publishers: 1
  notifications_per_publisher: 80
  rate_per_minute: 600
  placement: random
backend: local
timeouts: {ready_s: 90, quiescent_s: 60, drain_s: 60, run_s: 300}
"""


def test_saturate_brackets_the_rate_and_resumes(tmp_path: Path) -> None:
    spec = tmp_path / "sat.yaml"
    spec.write_text(SPEC)
    env = {**os.environ, "SCOTBED_STATE_DIR": str(tmp_path / "state")}
    cmd = [sys.executable, "-m", "scotbed.orchestrator.cli", "saturate", str(spec), "--out", str(tmp_path)]
    cmd += ["--lo", "300", "--hi", "12000", "--max-probes", "2"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=True).stdout
    assert out.startswith("criterion: sustainable = ")
    assert "workload.rate_per_minute=300: sustainable" in out  # 5/s over links of 20/s
    assert "workload.rate_per_minute=12000: NOT sustainable" in out  # 200/s on every link
    assert "maximum sustainable workload.rate_per_minute in [300, 12000)" in out
    sdir = tmp_path / "sat-saturate-workload.rate_per_minute"
    probes = json.loads((sdir / "index.json").read_text())["probes"]
    assert {p["rate"]: p["verdict"]["sustainable"] for p in probes.values()} == {300.0: True, 12000.0: False}
    assert (sdir / "queue-growth.png").stat().st_size > 0
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=True).stdout
    assert again.count("sustainable (") == 2 and len(list((sdir / "runs").iterdir())) == 2  # nothing re-run
    # an edited spec is a different experiment: its probes run again, like a campaign's changed cells
    spec.write_text(SPEC.replace("notifications_per_publisher: 80", "notifications_per_publisher: 60"))
    edited = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=True).stdout
    assert "maximum sustainable workload.rate_per_minute in [300, 12000)" in edited
    assert len(list((sdir / "runs").iterdir())) == 4
    edited_probes = json.loads((sdir / "index.json").read_text())["probes"]
    assert {p["run_dir"] for p in edited_probes.values()}.isdisjoint(p["run_dir"] for p in probes.values())


def test_saturate_refuses_a_corrupt_index_in_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "sat.yaml"
    spec.write_text(SPEC)
    sdir = tmp_path / "sat-saturate-workload.rate_per_minute"
    sdir.mkdir()
    (sdir / "index.json").write_text('{"probes": [')
    cmd = [sys.executable, "-m", "scotbed.orchestrator.cli", "saturate", str(spec), "--out", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "index is corrupt" in proc.stderr


def _sim_search(tmp_path: Path, spec_text: str) -> tuple[str, dict[float, dict[str, Any]]]:
    """``scotbed saturate`` of ``spec_text`` (600 notifications) on the sim backend, 2 % apart at the
    end; its output and every probe's verdict by rate."""
    spec = tmp_path / "sat.yaml"
    spec.write_text(spec_text.replace("notifications_per_publisher: 80", "notifications_per_publisher: 600"))
    env = {**os.environ, "SCOTBED_STATE_DIR": str(tmp_path / "state")}
    cmd = [sys.executable, "-m", "scotbed.orchestrator.cli", "saturate", str(spec), "--out", str(tmp_path)]
    cmd += ["--backend", "sim", "--lo", "300", "--hi", "12000", "--tolerance", "0.02", "--max-probes", "12"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=True).stdout
    index = tmp_path / "sat-saturate-workload.rate_per_minute" / "index.json"
    return out, {p["rate"]: p["verdict"] for p in json.loads(index.read_text())["probes"].values()}


def _bracket(verdicts: dict[float, dict[str, Any]]) -> tuple[float, float]:
    lo = max(r for r, v in verdicts.items() if v["sustainable"])
    return lo, min(r for r, v in verdicts.items() if not v["sustainable"])


def test_saturate_on_the_sim_backend_finds_the_links_capacity(tmp_path: Path) -> None:
    """The search in virtual time: flooding sends each notification over each link of the path once,
    so links of 20 envelopes/s sustain 20 notifications/s (1,200 a minute) and, within the
    criterion's tolerance of 1 message/s of queue growth, not 21/s (1,260 a minute); the bisection
    brackets that edge (found: [1259.8, 1282.6), the slopes taken over a window)."""
    out, verdicts = _sim_search(tmp_path, SPEC)
    lo, hi = _bracket(verdicts)
    assert f"maximum sustainable workload.rate_per_minute in [{lo:g}, {hi:g})" in out
    assert 1200 * 0.98 <= lo < hi <= 1260 * 1.05, verdicts
    assert "->" in verdicts[max(verdicts)]["worst_queue"]  # a link's output queue


def test_a_broker_too_slow_for_the_rate_is_a_growing_input_queue(tmp_path: Path) -> None:
    """Brokers that take 50 ms per message and links without a limit: flooding serves each notification
    once at each broker, so the path sustains 20 notifications/s and not 21/s; past that the
    publisher's broker's input queue grows (no output queue does), and the search brackets the edge."""
    _, verdicts = _sim_search(
        tmp_path, SPEC.replace("links: {capacity_msgs_per_s: 20}", "brokers: {service_us: 50000}")
    )
    lo, hi = _bracket(verdicts)
    assert 1200 * 0.98 <= lo < hi <= 1260 * 1.05, verdicts
    over = verdicts[max(verdicts)]
    assert over["worst_queue"].endswith(" input") and over["max_growth"] > 100
