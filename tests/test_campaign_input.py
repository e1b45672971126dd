"""Campaign hardening: cells known by their resolved spec, names inside --out, bad index, all failing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scotbed.orchestrator.campaign import CampaignError, CampaignIndex, load_campaign, run_campaign

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "experiments" / "quickstart.yaml"


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))


def _write(tmp_path: Path, body: str) -> Path:
    f = tmp_path / "c.yaml"
    f.write_text(body.replace("BASE", str(QUICKSTART)))
    return f


def _fake_run(calls: list[list[str]]):  # type: ignore[no-untyped-def]
    def run_one(spec: Path, sets: list[str], runs: Path) -> Path:
        calls.append(sets)
        d = runs / f"run-{len(calls)}"
        (d / "analysis").mkdir(parents=True)
        (d / "analysis" / "summary.json").write_text("{}")
        return d

    return run_one


def test_a_cell_whose_resolved_spec_changed_runs_again(tmp_path: Path) -> None:
    calls: list[list[str]] = []
    first = load_campaign(_write(tmp_path, "name: t\nbase: BASE\nmatrix: {routing: [snr, bid]}\n"))
    run_campaign(first, tmp_path / "out", _fake_run(calls))
    assert len(calls) == 2
    same = load_campaign(_write(tmp_path, "name: t\nbase: BASE\nmatrix: {routing: [snr, bid]}\n"))
    _, again = run_campaign(same, tmp_path / "out", _fake_run(calls))
    assert again == [] and len(calls) == 2  # nothing changed: nothing reruns
    changed = load_campaign(
        _write(
            tmp_path, "name: t\nbase: BASE\nmatrix: {routing: [snr, bid]}\nset: [workload.subscribers=5]\n"
        )
    )
    _, rerun = run_campaign(changed, tmp_path / "out", _fake_run(calls))
    assert [o.key for o in rerun] == ["routing=snr,rep=0", "routing=bid,rep=0"]
    assert all("workload.subscribers=5" in sets for sets in calls[2:])
    index = CampaignIndex(tmp_path / "out" / "t" / "index.json")
    assert index.cells["routing=snr,rep=0"]["run_dir"].endswith(
        "run-3"
    )  # the new run, not the old relabelled


@pytest.mark.parametrize("name", ["../../x", "a/b", ".hidden", "", "x" * 101])
def test_a_campaign_name_must_stay_inside_out(tmp_path: Path, name: str) -> None:
    with pytest.raises(CampaignError, match="stays inside --out"):
        load_campaign(_write(tmp_path, f"name: {json.dumps(name)}\nbase: BASE\nmatrix: {{routing: [snr]}}\n"))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scotbed.orchestrator.cli", *args], capture_output=True, text=True, timeout=300
    )


def test_a_corrupt_index_is_a_one_line_error(tmp_path: Path) -> None:
    c = _write(tmp_path, "name: t\nbase: BASE\nmatrix: {routing: [snr]}\n")
    (tmp_path / "out" / "t").mkdir(parents=True)
    (tmp_path / "out" / "t" / "index.json").write_text('{"cells": {"a": ')
    with pytest.raises(CampaignError, match="index is corrupt"):
        CampaignIndex(tmp_path / "out" / "t" / "index.json")
    proc = _cli("campaign", str(c), "--out", str(tmp_path / "out"), "--quiet")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and "index is corrupt" in proc.stderr


@pytest.mark.slow
def test_a_campaign_whose_cells_all_fail_prints_why_and_exits_3(tmp_path: Path) -> None:
    c = _write(
        tmp_path, "name: t\nbase: BASE\nmatrix: {routing: [snr, bid]}\nset: [timeouts.ready_s=0.001]\n"
    )
    proc = _cli("campaign", str(c), "--out", str(tmp_path / "out"), "--quiet")
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: routing=")]
    assert len(warnings) == 2 and all("deploy" in w for w in warnings), proc.stderr
    assert "no cell finished (2 failed)" in proc.stderr


@pytest.mark.parametrize("where", ["file", "unwritable"])
def test_an_unusable_out_is_a_one_line_error_exit_2(tmp_path: Path, where: str) -> None:
    out = tmp_path / "out"
    out.write_text("not a directory")
    if where == "unwritable":
        out = Path("/sys/scotbed-out")  # sysfs refuses new directories, even to root
    campaign = _write(tmp_path, "name: t\nbase: BASE\nmatrix: {routing: [snr]}\n")
    for cmd in (["run", str(QUICKSTART)], ["campaign", str(campaign)]):
        proc = _cli(*cmd, "--out", str(out), "--quiet")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1 and f"--out {out}" in proc.stderr, proc.stderr
