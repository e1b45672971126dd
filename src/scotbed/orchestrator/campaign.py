"""`scotbed campaign`: a base spec × a matrix of `--set` values × repetitions.

A campaign file::

    name: subscriber-scalability
    base: octopis-static.yaml          # relative to the campaign file
    matrix:                            # every combination is one cell
      routing: [bid, snr, dnr]
      workload.subscribers: [100, 200, 400]
    repetitions: 3                     # each cell runs this often; repetition r uses seed + r
    set: [workload.time_scale=2]       # optional --set values for every run
    backend: local                     # optional; the command line wins

Runs go in sequence into one campaign directory ``OUT/<name>/`` whose
``index.json`` records every cell's run directory and outcome. The directory
name has no timestamp on purpose: running the same campaign again resumes it
— finished runs are skipped, failed or unfinished ones are run again — and
then the aggregate analysis runs over everything.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scotbed import contract
from scotbed.errors import UserError
from scotbed.loader import read_document
from scotbed.orchestrator.spec import SpecError, load_spec


class CampaignError(UserError):
    """A campaign file that cannot be run; the message names the key."""


@dataclass(frozen=True)
class Cell:
    """One run of the campaign: the matrix values, the repetition, and its --set list."""

    values: tuple[tuple[str, Any], ...]
    repetition: int
    sets: tuple[str, ...]

    @property
    def key(self) -> str:
        parts = [f"{k}={_fmt(v)}" for k, v in self.values]
        return ",".join([*parts, f"rep={self.repetition}"])


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    return str(v)


@dataclass
class Campaign:
    name: str
    base: Path
    matrix: dict[str, list[Any]]
    repetitions: int = 1
    sets: list[str] = field(default_factory=list)
    backend: str | None = None

    def cells(self, base_seed: int) -> list[Cell]:
        keys = list(self.matrix)
        out = []
        for combo in itertools.product(*(self.matrix[k] for k in keys)):
            values = tuple(zip(keys, combo, strict=True))
            for r in range(self.repetitions):
                sets = [*self.sets, *(f"{k}={_fmt(v)}" for k, v in values), f"seed={base_seed + r}"]
                out.append(Cell(values, r, tuple(sets)))
        return out


def load_campaign(path: str | Path) -> Campaign:
    p = Path(path)
    doc = read_document(p, "campaign", CampaignError, "yaml")
    if not isinstance(doc, dict):
        raise CampaignError(f"{p}: a campaign is a mapping with name, base, matrix")
    allowed = {"name", "base", "matrix", "repetitions", "set", "backend"}
    unknown = sorted(set(doc) - allowed)
    if unknown:
        raise CampaignError(
            f"{p}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
        )
    for key in ("name", "base", "matrix"):
        if key not in doc:
            raise CampaignError(f"{p}: '{key}' is required")
    matrix = doc["matrix"]
    if not isinstance(matrix, dict) or not matrix:
        raise CampaignError(f"{p}: matrix: a mapping of key.path -> list of values")
    for k, vs in matrix.items():
        if not isinstance(vs, list) or not vs:
            raise CampaignError(f"{p}: matrix.{k}: a non-empty list of values, got {vs!r}")
    reps = doc.get("repetitions", 1)
    if not isinstance(reps, int) or reps < 1:
        raise CampaignError(f"{p}: repetitions: a whole number >= 1, got {reps!r}")
    sets = doc.get("set", [])
    if not isinstance(sets, list) or not all(isinstance(s, str) for s in sets):
        raise CampaignError(f"{p}: set: a list of key.path=value strings")
    campaign = Campaign(
        name=str(doc["name"]),
        base=(p.parent / str(doc["base"])).resolve(),
        matrix={str(k): list(v) for k, v in matrix.items()},
        repetitions=reps,
        sets=list(sets),
        backend=doc.get("backend"),
    )
    _check_cells(campaign)
    return campaign


def _check_cells(c: Campaign) -> None:
    """Validate every cell's spec before the first run, so a typo fails in a second, not an hour in."""
    spec = load_spec(c.base)
    for cell in c.cells(spec.seed):
        try:
            load_spec(c.base, cell.sets)
        except SpecError as e:
            raise CampaignError(f"cell {cell.key}: {e}") from None


@dataclass
class CellOutcome:
    key: str
    status: str  # "done", "failed"
    run_dir: str | None
    seconds: float
    error: str = ""


class CampaignIndex:
    """``index.json``: what each cell produced; written after every run so an interruption loses nothing."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cells: dict[str, dict[str, Any]] = {}
        if path.exists():
            self.cells = json.loads(path.read_text()).get("cells", {})

    def finished(self, key: str) -> bool:
        rec = self.cells.get(key)
        if not rec or rec.get("status") != "done" or not rec.get("run_dir"):
            return False
        return (Path(rec["run_dir"]) / contract.SUMMARY).exists()

    def record(self, outcome: CellOutcome, values: dict[str, Any]) -> None:
        self.cells[outcome.key] = {
            "status": outcome.status,
            "run_dir": outcome.run_dir,
            "seconds": round(outcome.seconds, 1),
            "error": outcome.error,
            "values": values,
        }
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"cells": self.cells}, indent=1, sort_keys=True))
        tmp.replace(self.path)


RunOne = Callable[[Path, list[str], Path], Path]
"""(spec path, --set values, runs directory) -> the run directory; raises on a failed run."""


def run_campaign(
    campaign: Campaign,
    out: Path,
    run_one: RunOne,
    on_cell: Callable[[int, int, Cell, str], None] = lambda i, n, cell, status: None,
) -> tuple[Path, list[CellOutcome]]:
    """Run every unfinished cell in sequence; returns the campaign directory and this call's outcomes."""
    cdir = out / campaign.name
    (cdir / "runs").mkdir(parents=True, exist_ok=True)
    (cdir / "campaign.yaml").write_text(
        yaml.safe_dump(
            {
                "name": campaign.name,
                "base": str(campaign.base),
                "matrix": campaign.matrix,
                "repetitions": campaign.repetitions,
                "set": campaign.sets,
            },
            sort_keys=False,
        )
    )
    index = CampaignIndex(cdir / "index.json")
    base_seed = load_spec(campaign.base).seed
    cells = campaign.cells(base_seed)
    outcomes = []
    for i, cell in enumerate(cells, 1):
        if index.finished(cell.key):
            on_cell(i, len(cells), cell, "skipped (finished earlier)")
            continue
        on_cell(i, len(cells), cell, "running")
        t0 = time.monotonic()
        values = {**dict(cell.values), "repetition": cell.repetition}
        try:
            run_dir = run_one(campaign.base, list(cell.sets), cdir / "runs")
            outcome = CellOutcome(cell.key, "done", str(run_dir), time.monotonic() - t0)
        except Exception as e:  # a failed run is recorded; Ctrl-C (BaseException) stops the campaign
            run_dir_attr = getattr(e, "run_dir", None)
            outcome = CellOutcome(
                cell.key, "failed", str(run_dir_attr) if run_dir_attr else None, time.monotonic() - t0, str(e)
            )
        index.record(outcome, values)
        outcomes.append(outcome)
        on_cell(i, len(cells), cell, outcome.status)
    return cdir, outcomes


def main(args: Any) -> int:
    """`scotbed campaign CAMPAIGN.yaml [--backend B] [--out DIR]`."""
    from scotbed.orchestrator.commands import CommandError
    from scotbed.orchestrator.progress import make_progress
    from scotbed.orchestrator.run import RunFailed, SignalGuard, options_from_args, run_spec

    try:
        campaign = load_campaign(args.campaign)
    except CampaignError as e:
        raise CommandError(str(e)) from None
    progress = make_progress(getattr(args, "quiet", False), getattr(args, "log_json", False))
    backend = args.backend or campaign.backend

    def run_one(spec: Path, sets: list[str], runs: Path) -> Path:
        options = options_from_args(args, backend=backend, out=runs, quiet=True)
        result = run_spec(spec, sets, options)
        if not result.ok:
            raise RunFailed(f"run finished but its checks failed: {result.verdict}", result.run_dir)
        return result.run_dir

    def on_cell(i: int, n: int, cell: Cell, status: str) -> None:
        progress.info(f"[{i}/{n}] {cell.key}: {status}")

    from scotbed.analysis.session import shared_session

    # SIGTERM between two runs stops the campaign as cleanly as during one; one Spark session for all runs
    with SignalGuard(), shared_session():
        cdir, outcomes = run_campaign(campaign, Path(args.out), run_one, on_cell)
    with progress.phase("aggregate"):
        from scotbed.analysis.campaign import aggregate

        aggregate(cdir)
    failed = [o for o in outcomes if o.status != "done"]
    for o in failed:
        progress.warn(f"{o.key}: {o.error}")
    progress.info(f"campaign directory: {cdir}")
    progress.info(f"report: {cdir / contract.REPORT}")
    return 1 if failed else 0
