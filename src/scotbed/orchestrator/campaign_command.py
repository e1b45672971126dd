"""``scotbed campaign CAMPAIGN.yaml``: runs every cell of a campaign (:mod:`scotbed.orchestrator.campaign`)
with `scotbed run`'s lifecycle, or its saturation searches (:mod:`scotbed.orchestrator.saturation`),
then aggregates them (:mod:`scotbed.analysis.campaign`) and prints the report's path on stdout."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from scotbed.orchestrator.campaign import (
    CHECKS_FAILED,
    INDEX,
    CampaignError,
    CampaignIndex,
    Cell,
    CellOutcome,
    load_campaign,
    run_campaign,
)


class CellProgress:
    """A run's progress inside a campaign: every phase line names the cell (``[2/4 routing=snr,r1]``)."""

    def __init__(self, inner: Any, label: str) -> None:
        self.inner = inner
        self.label = label
        self.shows_live: bool = inner.shows_live

    @contextmanager
    def phase(self, name: str) -> Iterator[Any]:
        with self.inner.phase(f"[{self.label}] {name}") as ph:
            yield ph

    def info(self, text: str) -> None:
        self.inner.info(f"[{self.label}] {text}")

    def warn(self, text: str) -> None:
        self.inner.warn(f"[{self.label}] {text}")

    def error(self, text: str) -> None:
        self.inner.error(f"[{self.label}] {text}")


def main(args: Any) -> int:
    """`scotbed campaign CAMPAIGN.yaml [--backend B] [--out DIR] [--set k=v]...`."""
    from scotbed.orchestrator.commands import CommandError
    from scotbed.orchestrator.outdir import writable_dir
    from scotbed.orchestrator.progress import make_progress
    from scotbed.orchestrator.run import RunFailed, SignalGuard, options_from_args, run_spec

    try:
        campaign = load_campaign(args.campaign, getattr(args, "sets", None) or ())
    except CampaignError as e:
        raise CommandError(str(e)) from None
    writable_dir(Path(args.out))
    progress = make_progress(getattr(args, "quiet", False), getattr(args, "log_json", False))
    backend = args.backend or campaign.backend
    if campaign.saturate is not None:
        from scotbed.orchestrator.saturation import run_sweep

        return run_sweep(campaign, campaign.saturate, args, progress)
    n_cells = len(campaign.cells())
    position = {"i": 0}

    def run_one(cell: Cell, run_dir: Path) -> Path:
        options = options_from_args(args, backend=backend, out=run_dir.parent, run_dir_name=run_dir.name)
        cell_progress = CellProgress(progress, f"{position['i']}/{n_cells} {cell.dirname}")
        result = run_spec(campaign.base, list(cell.sets), options, cell_progress)
        cell_progress.info(result.verdict)
        if result.summary and "validity" in result.summary:
            from scotbed.analysis.validity import line

            cell_progress.info(line(result.summary["validity"]))
        if not result.ok:
            raise RunFailed(f"{CHECKS_FAILED}: {result.verdict}", result.run_dir)
        return result.run_dir

    def on_cell(i: int, n: int, cell: Cell, status: str) -> None:
        position["i"] = i
        if status != "running":
            progress.info(f"[{i}/{n} {cell.dirname}] {status}")

    from scotbed.analysis.session import shared_session

    # SIGTERM between two runs stops the campaign as cleanly as during one; one Spark session for all runs
    try:
        with SignalGuard(), shared_session():
            cdir, outcomes = run_campaign(campaign, Path(args.out), run_one, on_cell)
    except CampaignError as e:
        raise CommandError(str(e)) from None
    return _finish(cdir, outcomes, args, progress)


def _finish(cdir: Path, outcomes: list[CellOutcome], args: Any, progress: Any) -> int:
    """Aggregate what finished and print the report's path; the exit status: 3 a run failed or none
    finished, 1 a run's checks failed, 5 (with ``--require-valid``) a run was host-bound, else 0."""
    from scotbed.analysis.validity import HOST_BOUND, exit_status

    failed = [o for o in outcomes if o.status != "done"]
    for o in failed:
        progress.warn(f"{o.key}: {o.error}")
    index = CampaignIndex(cdir / INDEX)
    if not any(index.finished(key) for key in index.cells):
        progress.error(f"scotbed campaign: failed: no cell finished ({len(failed)} failed); see above")
        return 3
    with progress.phase("aggregate"):
        from scotbed.analysis.campaign import aggregate

        result = aggregate(cdir, exclude_host_bound=getattr(args, "exclude_host_bound", False))
    progress.info(f"campaign directory: {cdir}")
    print(result["report"])
    if any(not o.error.startswith(CHECKS_FAILED) for o in failed):
        return 3
    validity = {"verdict": HOST_BOUND} if result["host_bound"] else None
    return exit_status(1 if failed else 0, validity, getattr(args, "require_valid", False))
