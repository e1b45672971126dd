"""Campaign planning and resumption, and `scotbed down` on real processes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from scotbed.orchestrator import down as down_mod
from scotbed.orchestrator.campaign import (
    CampaignError,
    CampaignIndex,
    Cell,
    load_campaign,
    run_campaign,
)
from scotbed.orchestrator.state import RunState, load_all, same_process

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))


def _campaign_file(tmp_path: Path, body: str) -> Path:
    f = tmp_path / "c.yaml"
    f.write_text(body.replace("BASE", str(REPO / "experiments" / "quickstart.yaml")))
    return f


def test_cells_are_the_matrix_times_repetitions_with_seeds(tmp_path: Path) -> None:
    c = load_campaign(
        _campaign_file(
            tmp_path,
            "name: t\nbase: BASE\n"
            "matrix: {routing: [bid, snr], workload.subscribers: [10, 20]}\nrepetitions: 2\n",
        )
    )
    cells = c.cells(base_seed=7)
    assert len(cells) == 8
    keys = [cell.key for cell in cells]
    assert len(set(keys)) == 8
    assert "routing=bid,workload.subscribers=10,rep=0" in keys
    first = cells[0]
    assert "seed=7" in first.sets and "routing=bid" in first.sets
    assert "seed=8" in cells[1].sets


def test_bad_campaign_files_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(CampaignError, match=r"matrix\.routing"):
        load_campaign(_campaign_file(tmp_path, "name: t\nbase: BASE\nmatrix: {routing: []}\n"))
    with pytest.raises(CampaignError, match="unknown key"):
        load_campaign(_campaign_file(tmp_path, "name: t\nbase: BASE\nmatrix: {routing: [bid]}\nrepeat: 2\n"))
    with pytest.raises(CampaignError, match="cell routing=nonsense"):
        load_campaign(_campaign_file(tmp_path, "name: t\nbase: BASE\nmatrix: {routing: [nonsense]}\n"))


class Interrupted(BaseException):
    """Stands in for Ctrl-C (pytest reserves a real KeyboardInterrupt for itself)."""


def test_interrupted_campaign_resumes_without_redoing_finished_runs(tmp_path: Path) -> None:
    c = load_campaign(
        _campaign_file(tmp_path, "name: t\nbase: BASE\nmatrix: {workload.subscribers: [10, 20, 30]}\n")
    )
    calls: list[list[str]] = []
    interrupt = [True]

    def run_one(cell: Cell, d: Path) -> Path:
        calls.append(list(cell.sets))
        if len(calls) == 2 and interrupt and interrupt.pop():
            raise Interrupted  # the user stops the campaign during its second run
        (d / "analysis").mkdir(parents=True)
        (d / "analysis" / "summary.json").write_text("{}")
        return d

    with pytest.raises(Interrupted):
        run_campaign(c, tmp_path / "out", run_one)
    assert len(calls) == 2
    index = CampaignIndex(tmp_path / "out" / "t" / "index.json")
    assert index.finished("workload.subscribers=10,rep=0")
    calls.clear()
    cdir, outcomes = run_campaign(c, tmp_path / "out", run_one)
    assert [o.key for o in outcomes] == ["workload.subscribers=20,rep=0", "workload.subscribers=30,rep=0"]
    assert [o.status for o in outcomes] == ["done", "done"]
    assert all(not any(s == "workload.subscribers=10" for s in sets) for sets in calls)
    assert cdir == tmp_path / "out" / "t"


def test_failed_cell_is_recorded_and_retried_on_resume(tmp_path: Path) -> None:
    c = load_campaign(_campaign_file(tmp_path, "name: t\nbase: BASE\nmatrix: {routing: [snr]}\n"))
    attempts = []

    def run_one(cell: Cell, d: Path) -> Path:
        attempts.append(1)
        (d / "analysis").mkdir(parents=True)
        if len(attempts) == 1:
            raise RuntimeError("broker b-a-0 died")
        (d / "analysis" / "summary.json").write_text("{}")
        return d

    _, first = run_campaign(c, tmp_path / "out", run_one)
    assert first[0].status == "failed" and "b-a-0" in first[0].error
    _, second = run_campaign(c, tmp_path / "out", run_one)
    assert second[0].status == "done"
    runs = tmp_path / "out" / "t" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == ["routing=snr,r0", "routing=snr,r0.attempt-1"]


def test_down_stops_recorded_processes_and_forgets_the_run(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        st = RunState("r1", "local", str(tmp_path))
        st.add_process(proc.pid, "broker:b-a-0")
        assert [s.run_id for s in load_all()] == ["r1"]
        report = down_mod.down()
        assert report.runs == ["r1"]
        assert report.processes == [f"broker:b-a-0 (pid {proc.pid})"]
        assert proc.wait(timeout=5) is not None
        assert load_all() == []
    finally:
        proc.kill()


def test_down_never_kills_a_reused_pid(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        st = RunState("r2", "local", str(tmp_path))
        st.add_process(proc.pid, "broker:b-a-0")
        st.processes[0].start_ticks = (st.processes[0].start_ticks or 0) + 1  # "another" process now
        st.save()
        assert not same_process(st.processes[0])
        down_mod.down("r2")
        time.sleep(0.2)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
