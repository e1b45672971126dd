"""When ``scotbed run`` starts its analysis's Spark session: once the measurement window has closed
(the workload runner's ``measured()``), if the brokers' logs are already in the run directory; else once
they are collected; never twice, and never for a run that is not analysed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scotbed import contract
from scotbed.orchestrator import run as run_module
from scotbed.orchestrator.run import Lifecycle, RunOptions, _WorkloadRun


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The run directories a session was started for (no JVM: the start is recorded)."""
    calls: list[Path] = []

    def record(run_dir: Path, *_: Any) -> object:
        calls.append(run_dir)
        return object()

    monkeypatch.setattr(run_module, "SessionStart", record)
    return calls


def _life(run_dir: Path, analyse: bool = True) -> Lifecycle:
    life = Lifecycle(Path("spec.yaml"), [], RunOptions(analyse=analyse), progress=None)  # type: ignore[arg-type]
    life.run_dir = run_dir
    (run_dir / contract.EVENTS_DIR).mkdir(parents=True, exist_ok=True)
    return life


def _measured(life: Lifecycle) -> None:
    """What a workload runner calls at the end of its drain."""
    workload = _WorkloadRun.__new__(_WorkloadRun)
    workload.life = life
    workload.measured()


def test_logs_already_here_start_the_session_at_the_drain_s_end_once(
    tmp_path: Path, started: list[Path]
) -> None:
    life = _life(tmp_path)
    (tmp_path / contract.EVENTS_DIR / "b-0.jsonl").write_text("{}\n")
    _measured(life)
    assert started == [tmp_path]
    life.start_analysis_session(collected=True)
    assert started == [tmp_path]  # not a second session after the collect


def test_logs_still_on_the_brokers_wait_for_the_collect(tmp_path: Path, started: list[Path]) -> None:
    life = _life(tmp_path)
    _measured(life)
    assert started == []  # no log yet to size the JVM by
    life.start_analysis_session(collected=True)
    assert started == [tmp_path]


def test_a_run_without_analysis_starts_no_session(tmp_path: Path, started: list[Path]) -> None:
    life = _life(tmp_path, analyse=False)
    (tmp_path / contract.EVENTS_DIR / "b-0.jsonl").write_text("{}\n")
    _measured(life)
    life.start_analysis_session(collected=True)
    assert started == []
