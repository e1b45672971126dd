"""Run the rows of ``scotbed reproduce`` as campaigns (resumable: a finished run is not re-run), record
each row (:mod:`.record`) and write the table from the records; ``main(args)`` is the command."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.orchestrator.campaign import (
    INDEX,
    Campaign,
    CampaignIndex,
    Cell,
    fingerprint,
    run_campaign,
)
from scotbed.orchestrator.reproduce import computed
from scotbed.orchestrator.reproduce.cells import REPO, campaign_of
from scotbed.orchestrator.reproduce.doc import PLOTS, chosen_records, write_doc
from scotbed.orchestrator.reproduce.effects import metric
from scotbed.orchestrator.reproduce.record import (
    RowRecord,
    RunFigures,
    git_commit,
    last_change,
    load_records,
    write_record,
)
from scotbed.orchestrator.reproduce.rows import Row, RowsError, load_rows, select


def saturated(campaign: Campaign, out: Path, args: Any, on_cell: Any, progress: Any) -> Path:
    """Run (or resume) a row whose cells are saturate searches (:mod:`..saturation`)."""
    from scotbed.orchestrator.run import options_from_args
    from scotbed.orchestrator.saturation import run_cells

    assert campaign.saturate is not None
    cdir = out / campaign.name
    (cdir / "runs").mkdir(parents=True, exist_ok=True)

    def options(runs: Path) -> Any:
        return options_from_args(args, backend=None, out=runs, quiet=True, analyse=False)

    run_cells(campaign, campaign.saturate, cdir, options, progress)
    return cdir


FoundRun = tuple[dict[str, Any], float, str, str]  # summary, seconds, cell key, spec fingerprint
Found = dict[tuple[str, int], FoundRun]


def _summaries(campaign: Campaign, index: CampaignIndex) -> Found:
    """(compared value as text, repetition) -> (summary, seconds, cell key, the campaign's fingerprint of
    the cell's resolved spec) of the cells finished at this scale; a saturate cell's summary is
    ``{"saturate": its interval}``."""
    from scotbed.orchestrator.saturation import finished, sweep_fingerprint

    out = {}
    for cell in campaign.cells():  # only runs of this scale count
        rec = index.cells.get(cell.key, {})
        if campaign.saturate is not None:
            if not finished(index, cell.key, sweep_fingerprint(campaign.base, cell.sets, campaign.saturate)):
                continue
            summary = {"saturate": rec["saturate"]}
        elif index.finished(cell.key, fingerprint(campaign.base, cell.sets)):
            summary = json.loads((Path(rec["run_dir"]) / contract.SUMMARY).read_text())
        else:
            continue
        vary = next(iter(campaign.matrix))
        out[(str(rec["values"][vary]), cell.repetition)] = (
            summary,
            float(rec["seconds"]),
            cell.key,
            str(rec.get("fingerprint", "")),
        )
    return out


def _run_figures(row: Row, name: str, rep: int, found: FoundRun) -> RunFigures:
    summary, seconds, key, spec_fingerprint = found
    saturate = "saturate" in summary
    return RunFigures(
        cell=key,
        compare=name,
        repetition=rep,
        seconds=seconds,
        correct=None if saturate else bool(summary.get("correctness", {}).get("ok")),
        validity="" if saturate else str(summary.get("validity", {}).get("verdict", "unknown")),
        spec_fingerprint=spec_fingerprint,
        figures={e.metric: metric(summary, e.metric) for e in row.effects},
    )


def measure(row: Row, quick: bool, out: Path, args: Any, progress: Any) -> RowRecord:
    """Run (or resume) the row's campaign; its record over the finished runs."""
    from scotbed.orchestrator.run import options_from_args, run_spec

    campaign = campaign_of(row, quick, getattr(args, "repetitions", None))
    load: list[float] = []

    def run_one(cell: Cell, run_dir: Path) -> Path:
        options = options_from_args(
            args, backend=None, out=run_dir.parent, quiet=True, run_dir_name=run_dir.name
        )
        load.append(os.getloadavg()[0])
        result = run_spec(campaign.base, list(cell.sets), options)
        load.append(os.getloadavg()[0])
        return result.run_dir

    def on_cell(i: int, n: int, cell: Any, status: str) -> None:
        progress.info(f"{row.name} [{i}/{n}] {cell.key}: {status}")

    if campaign.saturate is not None:
        load.append(os.getloadavg()[0])
        cdir = saturated(campaign, out, args, on_cell, progress)
        load.append(os.getloadavg()[0])
    else:
        cdir, _ = run_campaign(campaign, out, run_one, on_cell)
    found = {
        (row.name_of(v), r): x for (v, r), x in _summaries(campaign, CampaignIndex(cdir / INDEX)).items()
    }
    runs = [_run_figures(row, name, rep, x) for (name, rep), x in sorted(found.items())]
    return _record(row, quick, campaign.repetitions, load, runs, campaign.base)


def compute(row: Row, quick: bool, repetitions: int | None) -> RowRecord:
    """A computed row's record (:mod:`.computed`): its series for every repetition's seed."""
    assert row.computed is not None
    reps = repetitions or row.reps(quick)
    load = [os.getloadavg()[0]]
    runs = computed.compute(row, quick, reps)
    load.append(os.getloadavg()[0])
    return _record(row, quick, reps, load, runs, computed.source(row.computed))


def _record(
    row: Row, quick: bool, repetitions: int, load: list[float], runs: list[RunFigures], source: Path
) -> RowRecord:
    """The record of the row's runs; ``source``: the spec file (or computation module) it ran."""
    override = f" --repetitions {repetitions}" if repetitions != row.reps(quick) else ""
    return RowRecord(
        row=row.name,
        quick=quick,
        command=f"scotbed reproduce {row.name}{' --quick' if quick else ''}{override}",
        repetitions=repetitions,
        scale=list(row.sets(quick)),
        commit=git_commit(REPO),
        date_utc=datetime.now(UTC).strftime("%Y-%m-%d"),
        cores=os.cpu_count() or 0,
        load_1min=[round(x, 2) for x in load],
        runs=runs,
        spec_commit=last_change(REPO, source),
    )


def main(args: Any) -> int:
    from scotbed.analysis.session import shared_session
    from scotbed.orchestrator.commands import CommandError
    from scotbed.orchestrator.outdir import writable_dir
    from scotbed.orchestrator.progress import make_progress
    from scotbed.orchestrator.run import SignalGuard
    from scotbed.terminal import emit_json

    try:
        rows = load_rows()
        chosen = select(rows, list(args.names))
    except RowsError as e:
        raise CommandError(str(e)) from None
    doc = Path(args.doc)
    data_dir = doc.parent / PLOTS
    progress = make_progress(getattr(args, "quiet", False), getattr(args, "log_json", False))
    measured: list[str] = []
    if not args.table_only:
        out = Path(args.out)
        writable_dir(out)
        with SignalGuard(), shared_session():
            for row in (r for r in chosen if r.runnable):
                record = (
                    compute(row, args.quick, getattr(args, "repetitions", None))
                    if row.computed is not None
                    else measure(row, args.quick, out, args, progress)
                )
                path = write_record(data_dir, record)
                measured.append(row.name)
                progress.info(f"{row.name}: recorded in {path}")
    try:
        write_doc(doc, rows, chosen_records(rows, load_records(data_dir)))
    except RowsError as e:
        raise CommandError(str(e)) from None
    progress.info(f"reproduction table: {doc}")
    code = 3 if not args.table_only and not measured and any(r.runnable for r in chosen) else 0
    if code:
        progress.error("scotbed reproduce: no row was measured")
    if getattr(args, "log_json", False):
        emit_json(sys.stdout, event="result", exit_code=code, table=str(doc))
    else:
        print(doc)
    return code
