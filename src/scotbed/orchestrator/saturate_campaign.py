"""A campaign whose cells are ``scotbed saturate`` searches (the campaign file's ``saturate:`` block).

Each cell (matrix values × repetition) bisects ``saturate.param`` over short runs with the criterion of
:mod:`scotbed.orchestrator.saturation` and records its sustainable interval in the campaign's
``index.json``. A cell counts as finished only for the resolved spec and search it ran (its
fingerprint), as a campaign's run cell does; its probes are kept in ``probes.json``, so an interrupted
cell resumes at the probe it had reached. The aggregate is ``analysis/saturation.csv``, a plot of the
interval against each swept key per routing, and ``report.html``.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from scotbed.orchestrator.campaign import INDEX, Campaign, CampaignIndex, RecordIndex, fingerprint
from scotbed.orchestrator.saturate import search
from scotbed.orchestrator.saturation import Criterion, Sweep

PROBES = "probes.json"  # in the campaign directory: every probe of every cell


def sweep_fingerprint(base: Path, sets: tuple[str, ...], sweep: Sweep) -> str:
    """The cell's resolved spec, the search bounds and the criterion: a change to any measures again."""
    what = [fingerprint(base, sets), asdict(sweep), asdict(Criterion())]
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def finished(index: CampaignIndex, key: str, fp: str) -> bool:
    rec = index.cells.get(key) or {}
    return rec.get("status") == "done" and rec.get("fingerprint") == fp and "saturate" in rec


def run_cells(campaign: Campaign, sweep: Sweep, cdir: Path, options: Any, progress: Any) -> int:
    """Search every unfinished cell in sequence; returns how many failed in this call."""
    index = CampaignIndex(cdir / INDEX)
    probes = RecordIndex(cdir / PROBES, "probes")
    cells = campaign.cells()
    failed = 0
    for i, cell in enumerate(cells, 1):
        fp = sweep_fingerprint(campaign.base, cell.sets, sweep)
        if finished(index, cell.key, fp):
            progress.info(f"[{i}/{len(cells)}] {cell.key}: skipped (finished earlier)")
            continue
        progress.info(f"[{i}/{len(cells)}] {cell.key}: searching {sweep.param}")
        t0 = time.monotonic()
        try:
            lo, hi = search(campaign.base, sweep, list(cell.sets), cell.key, probes, options, progress.info)
            status, error = "done", ""
        except Exception as e:  # a failed search is recorded; Ctrl-C (BaseException) stops the campaign
            lo = hi = None
            status, error = "failed", str(e)
            failed += 1
        index.put(
            cell.key,
            {
                "status": status,
                "run_dir": None,
                "seconds": round(time.monotonic() - t0, 1),
                "error": error,
                "values": {**dict(cell.values), "repetition": cell.repetition},
                "fingerprint": fp,
                "saturate": {"param": sweep.param, "sustainable": lo, "unsustainable": hi},
            },
        )
        progress.info(f"[{i}/{len(cells)}] {cell.key}: {status} {sweep.param} in [{lo}, {hi})")
    return failed


def run_sweep(campaign: Campaign, sweep: Sweep, args: Any, progress: Any) -> int:
    """`scotbed campaign` for a file with ``saturate:``: exit 0, 1 when a cell failed, 3 when none ended."""
    from scotbed.analysis.saturation import sweep_report
    from scotbed.orchestrator.outdir import writable_dir
    from scotbed.orchestrator.run import SignalGuard, options_from_args

    cdir = writable_dir(Path(args.out)) / campaign.name
    (cdir / "runs").mkdir(parents=True, exist_ok=True)
    backend = args.backend or campaign.backend

    def options(out: Path) -> Any:
        return options_from_args(args, backend=backend, out=out, quiet=True, analyse=False)

    progress.info(f"criterion: {Criterion().describe()}")
    with SignalGuard():  # SIGTERM between two probes stops the campaign as cleanly as during one
        failed = run_cells(campaign, sweep, cdir, options, progress)
    index = CampaignIndex(cdir / INDEX)
    cells = campaign.cells()
    current = {c.key: sweep_fingerprint(campaign.base, c.sets, sweep) for c in cells}
    done = [index.cells[k] for k, fp in current.items() if finished(index, k, fp)]  # this spec's only
    if not done:
        progress.warn("no cell finished its search")
        return 3
    report = sweep_report(cdir, done, Criterion().describe())
    progress.info(f"campaign directory: {cdir}")
    progress.info(f"report: {report}")
    return 1 if failed else 0
