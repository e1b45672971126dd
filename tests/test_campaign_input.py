"""Campaign hardening: cells known by their resolved spec, names inside --out, bad index, all failing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scotbed.orchestrator.campaign import CampaignError, CampaignIndex, Cell, load_campaign, run_campaign

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
    def run_one(cell: Cell, d: Path) -> Path:
        calls.append(list(cell.sets))
        (d / "analysis").mkdir(parents=True)
        (d / "analysis" / "attempt").write_text(str(len(calls)))
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
    run_dir = Path(index.cells["routing=snr,rep=0"]["run_dir"])
    assert run_dir.name == "routing=snr,r0"
    assert (run_dir / "analysis" / "attempt").read_text() == "3"  # the new run, not the old relabelled


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


def test_cells_are_named_by_their_values_and_record_them(tmp_path: Path) -> None:
    c = load_campaign(
        _write(tmp_path, "name: t\nbase: BASE\nmatrix: {routing: [snr], workload.subscribers: [5]}\n")
    )
    calls: list[list[str]] = []
    cdir, _ = run_campaign(c, tmp_path / "out", _fake_run(calls))
    assert [p.name for p in (cdir / "runs").iterdir()] == ["routing=snr,workload.subscribers=5,r0"]
    rec = CampaignIndex(cdir / "index.json").cells["routing=snr,workload.subscribers=5,rep=0"]
    assert rec["values"] == {"routing": "snr", "workload.subscribers": 5, "repetition": 0, "seed": 7}


def test_a_swept_seed_is_each_cells_seed_and_no_two_cells_share_a_spec(tmp_path: Path) -> None:
    c = load_campaign(_write(tmp_path, "name: t\nbase: BASE\nmatrix: {seed: [1, 5]}\nrepetitions: 2\n"))
    assert [cell.seed for cell in c.cells()] == [1, 2, 5, 6]
    assert all(cell.sets.count(f"seed={cell.seed}") == 1 and len(cell.sets) == 1 for cell in c.cells())
    with pytest.raises(CampaignError, match=r"cells seed=1,rep=1 and seed=2,rep=0 resolve to the same spec"):
        load_campaign(_write(tmp_path, "name: t\nbase: BASE\nmatrix: {seed: [1, 2]}\nrepetitions: 2\n"))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "repetitions: 100000000\n",
            "repetitions: 100000000 is not allowed: input should be less than or equal to 1000",
        ),
        ("repetitions: 0\n", "repetitions: 0 is not allowed"),
        ("backend: moon\n", "backend: 'moon' is not allowed"),
        ("saturate: {param: x}\n", "saturate"),
        ("matrix2: {}\n", "matrix2: unknown key; allowed here:"),
    ],
)
def test_validate_refuses_bad_campaign_files_naming_the_key(tmp_path: Path, body: str, message: str) -> None:
    f = _write(tmp_path, "name: t\nbase: BASE\nmatrix: {routing: [snr]}\n" + body)
    proc = _cli("validate", str(f))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert message in proc.stderr and str(f) in proc.stderr, proc.stderr


def test_validate_accepts_a_campaign_and_applies_set_to_every_cell(tmp_path: Path) -> None:
    f = _write(tmp_path, "name: t\nbase: BASE\nmatrix: {routing: [snr, bid]}\nrepetitions: 2\n")
    proc = _cli("validate", str(f))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok: campaign t: 4 cells (routing (2) × 2 repetitions)")
    bad = _cli("validate", str(f), "--set", "workload.subscribers=-1")
    assert bad.returncode == 2 and "workload.subscribers" in bad.stderr, bad.stderr
    c = load_campaign(f, ["workload.subscribers=4"])
    assert all("workload.subscribers=4" in cell.sets for cell in c.cells())
