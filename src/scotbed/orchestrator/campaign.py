"""`scotbed campaign`: a base spec × a matrix of `--set` values × repetitions.

The file format (:class:`CampaignFile`, documented in docs/campaigns.md)::

    name: subscriber-scalability
    base: octopis-static.yaml          # relative to the campaign file
    matrix:                            # every combination is one cell
      routing: [bid, snr, dnr]
      workload.subscribers: [100, 200, 400]
    repetitions: 3                     # each cell runs this often; repetition r uses seed + r
    set: [workload.time_scale=2]       # optional --set values for every run
    backend: local                     # optional; the command line wins

Runs go in sequence into one campaign directory ``OUT/<name>/``, each into
``runs/<cell>/`` (``routing=snr,workload.subscribers=100,r0``); ``index.json``
records every cell's values, run directory and outcome, and the aggregate takes
the swept parameters from it, never from the specs. The directory name has no
timestamp on purpose: running the same campaign again resumes it — finished
runs are skipped, failed or unfinished ones are run again — and then the
aggregate analysis runs over everything. A cell counts as finished only for the
resolved spec it ran (its fingerprint is in ``index.json``): a cell whose spec
changed since (a new ``set:``, an edited base) runs again. With ``saturate:`` a
cell records the sustainable interval its bisection found instead of one run
(:mod:`scotbed.orchestrator.saturation`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from scotbed import bounds, contract
from scotbed.errors import UserError
from scotbed.experiment.spec import SpecError, dump_spec, load_spec
from scotbed.experiment.spec_errors import describe
from scotbed.loader import read_document

NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
CHECKS_FAILED = "run finished but its checks failed"
INDEX = contract.CAMPAIGN_INDEX
#: a bound that keeps a typo from planning a campaign no machine finishes (repetitions: scotbed.bounds)
MAX_CELLS = 10_000


@dataclass(frozen=True)
class Search:
    """The bounds of one bisection (:func:`scotbed.orchestrator.saturation.bisect_rate`): it stops
    when ``hi - lo <= tolerance * lo`` or after ``max_probes`` runs."""

    lo: float
    hi: float
    tolerance: float = 0.1
    max_probes: int = 8


@dataclass(frozen=True)
class Sweep:
    """A campaign's ``saturate:`` block: every cell is one bisection of ``param`` within ``search``."""

    param: str
    search: Search

    @classmethod
    def from_doc(cls, doc: Any) -> Sweep:
        """``{param, lo, hi[, tolerance, max_probes]}``; a ValueError names the bad key."""
        if not isinstance(doc, dict):
            raise ValueError("a mapping with param, lo, hi (and optionally tolerance, max_probes)")
        allowed = {"param", "lo", "hi", "tolerance", "max_probes"}
        unknown = sorted(set(doc) - allowed)
        if unknown or not {"param", "lo", "hi"} <= set(doc):
            raise ValueError(f"keys param, lo, hi required, tolerance, max_probes allowed; got {sorted(doc)}")
        if not isinstance(doc["param"], str) or not doc["param"]:
            raise ValueError(f"param: a key.path, got {doc['param']!r}")
        numbers = {k: doc[k] for k in allowed - {"param"} if k in doc}
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers.values()):
            raise ValueError(f"lo, hi, tolerance, max_probes: numbers, got {numbers}")
        defaults = Search(0.0, 0.0)
        search = Search(
            float(numbers["lo"]),
            float(numbers["hi"]),
            float(numbers.get("tolerance", defaults.tolerance)),
            int(numbers.get("max_probes", defaults.max_probes)),
        )
        if not 0 < search.lo < search.hi or search.tolerance <= 0 or search.max_probes < 2:
            raise ValueError(f"needs 0 < lo < hi, tolerance > 0, max_probes >= 2; got {numbers}")
        return cls(doc["param"], search)


class CampaignError(UserError):
    """A campaign file that cannot be run; the message names the key."""


class CampaignFile(BaseModel):
    """The campaign file (YAML): a base spec × a matrix of ``--set`` values × repetitions."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        description="the campaign directory's name under --out (letters, digits, '.', '_', '-')"
    )
    base: str = Field(description="the base spec, relative to the campaign file")
    matrix: dict[str, Annotated[list[Any], Field(min_length=1)]] = Field(
        min_length=1,
        description="key.path -> list of values; every combination is one cell; "
        "the keys are the campaign's swept parameters (routing is drawn as the series)",
    )
    repetitions: int = Field(
        default=1,
        ge=1,
        le=bounds.MAX_REPETITIONS,
        description="runs per cell; repetition r runs with the cell's seed + r, and they pool into one point",
    )
    set: list[str] = Field(default_factory=list, description="key.path=value applied to every run")
    backend: Literal["local", "compose", "k8s", "sim"] | None = Field(
        default=None, description="every run's backend; the command line's --backend wins"
    )
    saturate: dict[str, Any] | None = Field(
        default=None,
        description="{param, lo, hi[, tolerance, max_probes]}: every cell is a `scotbed saturate` "
        "bisection of param instead of one run",
    )

    @field_validator("name")
    @classmethod
    def _one_directory(cls, v: str) -> str:
        if not re.fullmatch(NAME, v):
            raise ValueError(
                "must be one directory name (letters, digits, '.', '_', '-'; not starting with '.'; "
                "at most 100 characters), so the campaign stays inside --out"
            )
        return v

    @field_validator("saturate", mode="before")
    @classmethod
    def _sweep(cls, v: Any) -> Any:
        if v is not None:
            Sweep.from_doc(v)
        return v


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    return str(v)


def path_safe(text: str) -> str:
    """``text`` as one directory name: every character but letters, digits and ``=,._+-`` becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9=,._+-]", "_", text).lstrip(".")[:200] or "_"


@dataclass(frozen=True)
class Cell:
    """One run of the campaign: the matrix values, the repetition, its seed and its --set list."""

    values: tuple[tuple[str, Any], ...]
    repetition: int
    seed: int
    sets: tuple[str, ...]

    @property
    def key(self) -> str:
        parts = [f"{k}={_fmt(v)}" for k, v in self.values]
        return ",".join([*parts, f"rep={self.repetition}"])

    @property
    def dirname(self) -> str:
        """The cell's run directory under ``runs/``: ``routing=snr,workload.subscribers=100,r0``."""
        parts = [f"{k}={_fmt(v)}" for k, v in self.values]
        return path_safe(",".join([*parts, f"r{self.repetition}"]))

    @property
    def record_values(self) -> dict[str, Any]:
        """What ``index.json`` records of the cell: its matrix values, repetition and seed."""
        return {**dict(self.values), "repetition": self.repetition, "seed": self.seed}


@dataclass
class Campaign:
    name: str
    base: Path
    matrix: dict[str, list[Any]]
    repetitions: int = 1
    sets: list[str] = field(default_factory=list)
    backend: str | None = None
    saturate: Sweep | None = None  # every cell is a bisection of saturate.param, not one run

    def base_seed(self) -> int:
        """The seed of repetition 0: the base spec's after the campaign's ``set:`` values."""
        return load_spec(self.base, self.sets).seed

    def cells(self, base_seed: int | None = None) -> list[Cell]:
        """Every combination of the matrix × repetitions; repetition r runs with seed + r, where
        seed is the cell's ``seed`` when the matrix sweeps it and the base seed otherwise."""
        seed0 = self.base_seed() if base_seed is None else base_seed
        keys = list(self.matrix)
        out = []
        for combo in itertools.product(*(self.matrix[k] for k in keys)):
            values = tuple(zip(keys, combo, strict=True))
            first = int(dict(values).get("seed", seed0))
            for r in range(self.repetitions):
                sets = (*self.sets, *(f"{k}={_fmt(v)}" for k, v in values if k != "seed"))
                out.append(Cell(values, r, first + r, (*sets, f"seed={first + r}")))
        return out

    def as_doc(self) -> dict[str, Any]:
        """What the campaign directory's ``campaign.yaml`` records (the aggregate reads its matrix)."""
        return {
            "name": self.name,
            "base": str(self.base),
            "matrix": self.matrix,
            "repetitions": self.repetitions,
            "set": self.sets,
            **({"saturate": asdict(self.saturate)} if self.saturate else {}),
        }


def load_campaign(path: str | Path, extra_sets: Sequence[str] = ()) -> Campaign:
    """The campaign file at ``path``, with ``extra_sets`` (the command line's ``--set``) applied to
    every cell after the file's own; every cell's spec is validated before anything runs."""
    p = Path(path)
    doc = read_document(p, "campaign", CampaignError, "yaml")
    if not isinstance(doc, dict):
        raise CampaignError(f"{p}: a campaign is a mapping with name, base, matrix")
    try:
        model = CampaignFile.model_validate(doc)
    except ValidationError as e:
        raise CampaignError(
            "\n".join(f"{p}: {describe(err, doc, CampaignFile, ())}" for err in e.errors())
        ) from None
    campaign = Campaign(
        name=model.name,
        base=(p.parent / model.base).resolve(),
        matrix={str(k): list(v) for k, v in model.matrix.items()},
        repetitions=model.repetitions,
        sets=[*model.set, *extra_sets],
        backend=model.backend,
        saturate=Sweep.from_doc(model.saturate) if model.saturate is not None else None,
    )
    _check_cells(p, campaign)
    return campaign


def fingerprint(base: Path, sets: list[str] | tuple[str, ...]) -> str:
    """What identifies a cell's run: a hash of its resolved spec."""
    return hashlib.sha256(dump_spec(load_spec(base, sets)).encode()).hexdigest()[:16]


def _check_cells(path: Path, c: Campaign) -> None:
    """Validate every cell's spec before the first run, so a typo fails in a second, not an hour in;
    two cells that resolve to the same spec would be counted as independent samples, so they are
    refused too."""
    try:
        cells = c.cells()
    except SpecError as e:
        raise CampaignError(f"{path}: base {c.base}: {e}") from None
    if len(cells) > MAX_CELLS:
        raise CampaignError(f"{path}: {len(cells)} cells (matrix × repetitions); at most {MAX_CELLS}")
    seen: dict[str, Cell] = {}
    for cell in cells:
        try:
            fp = fingerprint(c.base, cell.sets)
            if c.saturate is not None:  # the searched key must be a spec key that takes a number
                load_spec(c.base, [*cell.sets, f"{c.saturate.param}={c.saturate.search.lo:g}"])
        except SpecError as e:
            raise CampaignError(f"{path}: cell {cell.key}: {e}") from None
        if fp in seen:
            raise CampaignError(
                f"{path}: cells {seen[fp].key} and {cell.key} resolve to the same spec (seed {cell.seed}), "
                "so they would count as independent samples; space the matrix's seeds by at least "
                "repetitions, or sweep no seed"
            )
        seen[fp] = cell


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


RunOne = Callable[["Cell", Path], Path]
"""(cell, the run directory to create) -> the run directory; raises on a failed run."""


def _set_aside(run_dir: Path) -> None:
    """An earlier, unfinished attempt's directory moves to ``<dir>.attempt-N``, its logs kept."""
    if not run_dir.exists():
        return
    n = 1
    while run_dir.with_name(f"{run_dir.name}.attempt-{n}").exists():
        n += 1
    shutil.move(str(run_dir), run_dir.with_name(f"{run_dir.name}.attempt-{n}"))


def run_campaign(
    campaign: Campaign,
    out: Path,
    run_one: RunOne,
    on_cell: Callable[[int, int, Cell, str], None] = lambda i, n, cell, status: None,
) -> tuple[Path, list[CellOutcome]]:
    """Run every unfinished cell in sequence; returns the campaign directory and this call's outcomes."""
    cdir = out / campaign.name
    (cdir / contract.CAMPAIGN_RUNS).mkdir(parents=True, exist_ok=True)
    (cdir / contract.CAMPAIGN_FILE).write_text(yaml.safe_dump(campaign.as_doc(), sort_keys=False))
    index = CampaignIndex(cdir / INDEX)
    cells = campaign.cells()
    outcomes = []
    for i, cell in enumerate(cells, 1):
        fp = fingerprint(campaign.base, cell.sets)
        if index.finished(cell.key, fp):
            on_cell(i, len(cells), cell, "skipped (finished earlier)")
            continue
        on_cell(i, len(cells), cell, "running")
        t0 = time.monotonic()
        run_dir = cdir / contract.CAMPAIGN_RUNS / cell.dirname
        _set_aside(run_dir)
        try:
            done = run_one(cell, run_dir)
            outcome = CellOutcome(cell.key, "done", str(done), time.monotonic() - t0, "", fp)
        except Exception as e:  # a failed run is recorded; Ctrl-C (BaseException) stops the campaign
            run_dir_attr = getattr(e, "run_dir", None)
            run_dir_text = str(run_dir_attr) if run_dir_attr else None
            outcome = CellOutcome(cell.key, "failed", run_dir_text, time.monotonic() - t0, str(e), fp)
        index.record(outcome, cell.record_values)
        outcomes.append(outcome)
        on_cell(i, len(cells), cell, outcome.status)
    return cdir, outcomes
