"""Run the rows of ``scotbed reproduce`` as campaigns (resumable: a finished run is not re-run) and
write the table; ``main(args)`` is the command."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.orchestrator.campaign import (
    INDEX,
    Campaign,
    CampaignIndex,
    Cell,
    Sweep,
    fingerprint,
    run_campaign,
)
from scotbed.orchestrator.reproduce.doc import Measured, write_doc
from scotbed.orchestrator.reproduce.effects import judge, relative_changes
from scotbed.orchestrator.reproduce.rows import Row, RowsError, load_rows, select

REPO = Path(__file__).resolve().parents[4]


def campaign_of(row: Row, quick: bool, repetitions: int | None = None) -> Campaign:
    """The row as a campaign: its spec × its compared values of ``vary`` (routing unless the row says)
    × repetitions (the row's unless overridden), at the row's scale."""
    assert row.spec is not None
    return Campaign(
        name=f"{row.name}-quick" if quick else row.name,
        base=(REPO / row.spec).resolve(),
        matrix={row.vary: [row.value(n) for n in row.compare]},
        repetitions=repetitions or row.reps(quick),
        sets=list(row.sets(quick)),
        saturate=Sweep.from_doc(row.saturate) if row.saturate else None,
    )


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


Found = dict[tuple[str, int], tuple[dict[str, Any], float, str]]


def _summaries(campaign: Campaign, index: CampaignIndex) -> Found:
    """(compared value as text, repetition) -> (summary, seconds, cell key) of the cells finished at
    this scale; a saturate cell's summary is ``{"saturate": its interval}``."""
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
        out[(str(rec["values"][vary]), cell.repetition)] = (summary, float(rec["seconds"]), cell.key)
    return out


def measure(row: Row, quick: bool, out: Path, args: Any, progress: Any) -> Measured:
    """Run (or resume) the row's campaign and judge each effect over the finished runs."""
    from scotbed.orchestrator.run import options_from_args, run_spec

    campaign = campaign_of(row, quick, getattr(args, "repetitions", None))
    verdicts: dict[str, str] = {}

    def run_one(cell: Cell, run_dir: Path) -> Path:
        options = options_from_args(
            args, backend=None, out=run_dir.parent, quiet=True, run_dir_name=run_dir.name
        )
        result = run_spec(campaign.base, list(cell.sets), options)
        verdicts[result.run_dir.name] = result.verdict
        return result.run_dir

    def on_cell(i: int, n: int, cell: Any, status: str) -> None:
        progress.info(f"{row.name} [{i}/{n}] {cell.key}: {status}")

    t0 = time.monotonic()
    if getattr(args, "table_only", False):
        cdir = out / campaign.name
    elif campaign.saturate is not None:
        cdir = saturated(campaign, out, args, on_cell, progress)
    else:
        cdir, _ = run_campaign(campaign, out, run_one, on_cell)
    found = {
        (row.name_of(v), r): x for (v, r), x in _summaries(campaign, CampaignIndex(cdir / INDEX)).items()
    }
    summaries = {k: s for k, (s, _, _) in found.items()}
    seconds = sum(t for _, t, _ in found.values())
    incorrect = [  # a saturate cell's probes are judged by the criterion, not the oracle
        key for s, _, key in found.values() if "saturate" not in s and not s.get("correctness", {}).get("ok")
    ]
    judged = [judge(e, relative_changes(e, summaries)) for e in row.effects]
    wall = time.monotonic() - t0
    override = f" --repetitions {campaign.repetitions}" if campaign.repetitions != row.reps(quick) else ""
    command = f"scotbed reproduce {row.name}{' --quick' if quick else ''}{override}"
    runs, reps = len(summaries), campaign.repetitions
    return Measured(row, quick, judged, runs, seconds, wall, incorrect, command, reps)


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
    out = Path(args.out)
    writable_dir(out)
    progress = make_progress(getattr(args, "quiet", False), getattr(args, "log_json", False))
    measured: dict[str, Measured] = {}
    with SignalGuard(), shared_session():
        for row in chosen:
            if row.runnable:
                measured[row.name] = measure(row, args.quick, out, args, progress)
    doc = Path(args.doc) if args.doc else out / "reproduction.md"
    write_doc(doc, rows, measured, _command(args))
    progress.info(f"reproduction table: {doc}")
    code = 3 if not measured and any(r.runnable for r in chosen) else 0
    if code:
        progress.error("scotbed reproduce: no row was measured")
    if getattr(args, "log_json", False):
        emit_json(sys.stdout, event="result", exit_code=code, table=str(doc))
    else:
        print(doc)
    return code


def _command(args: Any) -> str:
    parts = ["scotbed reproduce", *args.names]
    if args.quick:
        parts.append("--quick")
    return " ".join(parts)
