"""Reproduction records built in memory for the table's tests: one run's figures, one row's record."""

from __future__ import annotations

from scotbed.orchestrator.reproduce.record import RowRecord, RunFigures


def run_figures(
    cell: str,
    compare: str,
    repetition: int,
    figures: dict[str, float],
    *,
    validity: str = "",
    correct: bool | None = None,
    seconds: float = 1.0,
) -> RunFigures:
    """One run's figures under ``compare`` (``validity`` "" and ``correct`` None: a computed run)."""
    return RunFigures(
        cell=cell,
        compare=compare,
        repetition=repetition,
        seconds=seconds,
        correct=correct,
        validity=validity,
        spec_fingerprint="ab" * 8,
        figures=figures,
    )


def row_record(
    row: str,
    runs: list[RunFigures],
    repetitions: int,
    *,
    quick: bool = False,
    scale: tuple[str, ...] = (),
) -> RowRecord:
    """A record of ``row`` measured at a fixed commit, date and load, holding ``runs``."""
    return RowRecord(
        row=row,
        quick=quick,
        command=f"scotbed reproduce {row}",
        repetitions=repetitions,
        scale=list(scale),
        commit="0123abc",
        date_utc="2026-11-29",
        cores=2,
        load_1min=[0.5, 1.5],
        runs=runs,
    )
