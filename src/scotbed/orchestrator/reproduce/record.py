"""A measured row as data: ``reproduction/<row>.json`` next to the table.

``scotbed reproduce NAME`` writes the record of every row it measures; the table
(:mod:`.doc`) is written from the records alone, so ``--table-only`` regenerates it anywhere and
nobody edits it by hand. A record holds what a reader needs to trust or question a row: every run's
figures and validity verdict (the effects are computed from them when the table is written), the
fingerprint of each run's resolved spec, the commit, the host's cores and load average during the runs,
and the date.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from scotbed.analysis.validity import HOST_BOUND
from scotbed.orchestrator.reproduce.rows import Effect, RowsError

RECORD_SUFFIX = ".json"
QUICK_SUFFIX = "-quick"


class RunFigures(BaseModel):
    """One finished run of a row: its cell, time, verdicts and the summary figures its effects use."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cell: str
    compare: str
    repetition: int
    seconds: float
    correct: bool | None  # None: a saturate search, judged by its criterion, not the oracle
    validity: str  # valid, host-bound, unknown; "" for a saturate search
    spec_fingerprint: str  # the campaign index's of the cell's resolved spec (campaign.fingerprint)
    figures: dict[str, float | None]


class RowRecord(BaseModel):
    """What ``scotbed reproduce`` measured for one row at one scale."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    row: str
    quick: bool
    command: str
    repetitions: int
    scale: list[str]
    commit: str
    date_utc: str
    cores: int
    load_1min: list[float]  # sampled before and after every run this invocation made
    runs: list[RunFigures]
    spec_commit: str | None = None  # the last commit that changed the row's spec file, when measured

    def summaries(self, effect: Effect) -> dict[tuple[str, int], dict[str, Any]]:
        """Each run's figure of the effect's metric as a summary.json fragment, by (compared value,
        repetition). A host-bound run's delays and queues measure the host: it is left out of a timed
        effect (:attr:`Effect.timed`) and kept in the others."""
        out = {}
        for r in self.runs:
            if effect.timed and r.validity == HOST_BOUND:
                continue
            node: Any = r.figures.get(effect.metric)
            for part in reversed(effect.metric.split(".")):
                node = {part: node}
            out[(r.compare, r.repetition)] = node
        return out

    def host_bound(self, *compare: str) -> list[RunFigures]:
        """The host-bound runs of the named compared values."""
        return [r for r in self.runs if r.validity == HOST_BOUND and r.compare in compare]

    @property
    def stem(self) -> str:
        return self.row + (QUICK_SUFFIX if self.quick else "")


#: what ``scotbed reproduce`` itself writes into the checkout: a change there is an output, not a change
#: to what was measured
OUTPUTS = ("docs/reproduction.md", "docs/reproduction")


def git_commit(repo: Path) -> str:
    """The checkout's commit, ``+dirty`` when tracked files other than the table and its records
    (:data:`OUTPUTS`, which a row measured before this one rewrote) differ; ``unknown`` outside git."""
    exclude = [f":(exclude){p}" for p in OUTPUTS]
    try:
        head = _git(repo, "rev-parse", "HEAD")
        dirty = _git(repo, "status", "--porcelain", "--untracked-files=no", "--", ".", *exclude)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def last_change(repo: Path, path: Path) -> str:
    """The last commit that changed ``path`` (``unknown`` outside git or for a file git does not track)."""
    try:
        return _git(repo, "log", "-1", "--format=%H", "--", str(path)) or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()


def write_record(data_dir: Path, record: RowRecord) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"{record.stem}{RECORD_SUFFIX}"
    path.write_text(record.model_dump_json(indent=1) + "\n")
    return path


def load_records(data_dir: Path) -> dict[str, RowRecord]:
    """Every record in ``data_dir`` by its file's stem (``<row>`` or ``<row>-quick``)."""
    out = {}
    for path in sorted(data_dir.glob(f"*{RECORD_SUFFIX}")):
        try:
            out[path.stem] = RowRecord.model_validate_json(path.read_text())
        except ValidationError as e:
            raise RowsError(f"{path}: not a reproduction record: {_first_error(e)}") from None
    return out


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(x) for x in err["loc"]) or "(top level)"
    return f"{where}: {err['msg']}"
