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
    saturate:                          # optional: every cell is a `scotbed saturate` bisection
      {param: workload.rate_per_minute, lo: 300, hi: 6000, tolerance: 0.1, max_probes: 6}

Runs go in sequence into one campaign directory ``OUT/<name>/`` whose
``index.json`` records every cell's run directory and outcome. The directory
name has no timestamp on purpose: running the same campaign again resumes it
— finished runs are skipped, failed or unfinished ones are run again — and
then the aggregate analysis runs over everything. A cell counts as finished
only for the resolved spec it ran (its fingerprint is in ``index.json``): a
cell whose spec changed since (a new ``set:``, an edited base) runs again.
The name is one path component, so the directory stays inside ``--out``.
With ``saturate:`` a cell records the sustainable interval its bisection found instead of one run
(:mod:`scotbed.orchestrator.saturate_campaign`), fingerprinted by its resolved spec and the search.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scotbed import bounds, contract
from scotbed.errors import UserError
from scotbed.loader import read_document
from scotbed.orchestrator.saturation import Sweep
from scotbed.orchestrator.spec import SpecError, dump_spec, load_spec

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
CHECKS_FAILED = "run finished but its checks failed"
INDEX = "index.json"  # in the campaign directory


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
    saturate: Sweep | None = None  # every cell is a bisection of saturate.param, not one run

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
    allowed = {"name", "base", "matrix", "repetitions", "set", "backend", "saturate"}
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
    if not isinstance(doc["name"], str) or not NAME.fullmatch(doc["name"]):
        raise CampaignError(
            f"{p}: name: {doc['name']!r} must be one directory name (letters, digits, '.', '_', '-'; "
            "not starting with '.'), so the campaign stays inside --out"
        )
    reps = doc.get("repetitions", 1)
    if not isinstance(reps, int) or isinstance(reps, bool) or not 1 <= reps <= bounds.MAX_REPETITIONS:
        raise CampaignError(f"{p}: repetitions: a whole number in 1..{bounds.MAX_REPETITIONS}, got {reps!r}")
    sets = doc.get("set", [])
    if not isinstance(sets, list) or not all(isinstance(s, str) for s in sets):
        raise CampaignError(f"{p}: set: a list of key.path=value strings")
    try:
        sweep = Sweep.from_doc(doc["saturate"]) if "saturate" in doc else None
    except ValueError as e:
        raise CampaignError(f"{p}: saturate: {e}") from None
    campaign = Campaign(
        name=str(doc["name"]),
        base=(p.parent / str(doc["base"])).resolve(),
        matrix={str(k): list(v) for k, v in matrix.items()},
        repetitions=reps,
        sets=list(sets),
        backend=doc.get("backend"),
        saturate=sweep,
    )
    _check_cells(campaign)
    return campaign


def fingerprint(base: Path, sets: list[str] | tuple[str, ...]) -> str:
    """What identifies a cell's run: a hash of its resolved spec."""
    return hashlib.sha256(dump_spec(load_spec(base, sets)).encode()).hexdigest()[:16]


def _check_cells(c: Campaign) -> None:
    """Validate every cell's spec before the first run, so a typo fails in a second, not an hour in."""
    spec = load_spec(c.base)
    for cell in c.cells(spec.seed):
        try:
            load_spec(c.base, cell.sets)
            if c.saturate is not None:  # the searched key must be a spec key that takes a number
                load_spec(c.base, [*cell.sets, f"{c.saturate.param}={c.saturate.search.lo:g}"])
        except SpecError as e:
            raise CampaignError(f"cell {cell.key}: {e}") from None


@dataclass
class CellOutcome:
    key: str
    status: str  # "done", "failed"
    run_dir: str | None
    seconds: float
    error: str = ""
    fingerprint: str = ""


class RecordIndex:
    """A JSON file of records by key (under ``section``), rewritten after every record so an
    interruption loses nothing: running the same command again reads it back and resumes."""

    def __init__(self, path: Path, section: str) -> None:
        self.path = path
        self.section = section
        self.records: dict[str, dict[str, Any]] = {}
        if path.exists():
            try:
                self.records = json.loads(path.read_text())[section]
                if not isinstance(self.records, dict) or not all(
                    isinstance(r, dict) for r in self.records.values()
                ):
                    raise TypeError(f"{section!r} is not a mapping of records")
            except (ValueError, KeyError, TypeError) as e:
                raise CampaignError(
                    f"{path}: the index is corrupt ({type(e).__name__}: {e}); "
                    "move it away to run everything again"
                ) from None

    def put(self, key: str, rec: dict[str, Any]) -> None:
        self.records[key] = rec
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({self.section: self.records}, indent=1, sort_keys=True))
        tmp.replace(self.path)


class CampaignIndex(RecordIndex):
    """``index.json``: what each cell produced."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, "cells")

    @property
    def cells(self) -> dict[str, dict[str, Any]]:
        return self.records

    def finished(self, key: str, fingerprint: str | None = None) -> bool:
        rec = self.cells.get(key)
        if not rec or rec.get("status") != "done" or not rec.get("run_dir"):
            return False
        if fingerprint is not None and rec.get("fingerprint") != fingerprint:
            return False
        return (Path(rec["run_dir"]) / contract.SUMMARY).exists()

    def record(self, outcome: CellOutcome, values: dict[str, Any]) -> None:
        self.put(
            outcome.key,
            {
                "status": outcome.status,
                "run_dir": outcome.run_dir,
                "seconds": round(outcome.seconds, 1),
                "error": outcome.error,
                "values": values,
                "fingerprint": outcome.fingerprint,
            },
        )


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
    index = CampaignIndex(cdir / INDEX)
    base_seed = load_spec(campaign.base).seed
    cells = campaign.cells(base_seed)
    outcomes = []
    for i, cell in enumerate(cells, 1):
        fp = fingerprint(campaign.base, cell.sets)
        if index.finished(cell.key, fp):
            on_cell(i, len(cells), cell, "skipped (finished earlier)")
            continue
        on_cell(i, len(cells), cell, "running")
        t0 = time.monotonic()
        values = {**dict(cell.values), "repetition": cell.repetition}
        try:
            run_dir = run_one(campaign.base, list(cell.sets), cdir / "runs")
            outcome = CellOutcome(cell.key, "done", str(run_dir), time.monotonic() - t0, "", fp)
        except Exception as e:  # a failed run is recorded; Ctrl-C (BaseException) stops the campaign
            run_dir_attr = getattr(e, "run_dir", None)
            run_dir_text = str(run_dir_attr) if run_dir_attr else None
            outcome = CellOutcome(cell.key, "failed", run_dir_text, time.monotonic() - t0, str(e), fp)
        index.record(outcome, values)
        outcomes.append(outcome)
        on_cell(i, len(cells), cell, outcome.status)
    return cdir, outcomes


def main(args: Any) -> int:
    """`scotbed campaign CAMPAIGN.yaml [--backend B] [--out DIR]`."""
    from scotbed.orchestrator.commands import CommandError
    from scotbed.orchestrator.outdir import writable_dir
    from scotbed.orchestrator.progress import make_progress
    from scotbed.orchestrator.run import RunFailed, SignalGuard, options_from_args, run_spec

    try:
        campaign = load_campaign(args.campaign)
    except CampaignError as e:
        raise CommandError(str(e)) from None
    writable_dir(Path(args.out))
    progress = make_progress(getattr(args, "quiet", False), getattr(args, "log_json", False))
    backend = args.backend or campaign.backend
    if campaign.saturate is not None:
        from scotbed.orchestrator.saturate_campaign import run_sweep

        return run_sweep(campaign, campaign.saturate, args, progress)

    def run_one(spec: Path, sets: list[str], runs: Path) -> Path:
        options = options_from_args(args, backend=backend, out=runs, quiet=True)
        result = run_spec(spec, sets, options)
        if not result.ok:
            raise RunFailed(f"{CHECKS_FAILED}: {result.verdict}", result.run_dir)
        return result.run_dir

    def on_cell(i: int, n: int, cell: Cell, status: str) -> None:
        progress.info(f"[{i}/{n}] {cell.key}: {status}")

    from scotbed.analysis.session import shared_session

    # SIGTERM between two runs stops the campaign as cleanly as during one; one Spark session for all runs
    try:
        with SignalGuard(), shared_session():
            cdir, outcomes = run_campaign(campaign, Path(args.out), run_one, on_cell)
    except CampaignError as e:
        raise CommandError(str(e)) from None
    failed = [o for o in outcomes if o.status != "done"]
    for o in failed:
        progress.warn(f"{o.key}: {o.error}")
    index = CampaignIndex(cdir / INDEX)
    if not any(index.finished(key) for key in index.cells):
        print(
            f"scotbed campaign: failed: no cell finished ({len(failed)} failed); see above", file=sys.stderr
        )
        return 3
    with progress.phase("aggregate"):
        from scotbed.analysis.campaign import aggregate

        aggregate(cdir)
    progress.info(f"campaign directory: {cdir}")
    progress.info(f"report: {cdir / contract.REPORT}")
    if any(not o.error.startswith(CHECKS_FAILED) for o in failed):
        return 3
    return 1 if failed else 0
