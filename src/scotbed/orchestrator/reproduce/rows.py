"""The reproduction rows (``rows.yaml``): what each paper states and which experiment measures it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scotbed.errors import UserError
from scotbed.orchestrator.reproduce.computations import COMPUTATIONS

ROWS_FILE = Path(__file__).with_name("rows.yaml")


class RowsError(UserError):
    """A rows file that cannot be read; the message names the row and key."""


@dataclass(frozen=True)
class Effect:
    """The paper's stated relative change of ``metric`` (a summary.json path), ``variant`` vs ``baseline``.

    A paper whose text states only a bound, in words ("equally or better", "much higher rates") or as
    a limit ("never exceeds 30%"), gives it instead of ``paper``: ``at_most`` (the change it claims
    is at most that) or ``at_least`` (the change it claims is at least that)."""

    label: str
    metric: str
    variant: str
    baseline: str
    paper: float = math.nan
    at_most: float | None = None
    at_least: float | None = None

    @property
    def bound(self) -> float | None:
        """The stated bound, either direction (None when the paper gives a figure)."""
        return self.at_most if self.at_most is not None else self.at_least

    @property
    def timed(self) -> bool:
        """Whether the metric is a time (a delay, a share of delays, a duration in ms or s) or a queue
        length, which the host's load decides on a host-bound run (docs/host-bound.md); message
        counts, table sizes and loads are not."""
        return any(
            "delay" in part or part.endswith(("_ms", "_s")) or "queue" in part
            for part in self.metric.split(".")
        )


@dataclass(frozen=True)
class Row:
    name: str
    system: str
    paper: str
    status: str
    figure: str = ""
    spec: str | None = None
    computed: str | None = None  # instead of a spec: a pure computation's name (:mod:`.computed`)
    compare: tuple[str, ...] = ()
    repetitions: int = 1
    scale: tuple[str, ...] = ()
    quick_repetitions: int = 1
    quick: tuple[str, ...] = ()
    effects: tuple[Effect, ...] = ()
    notes: str = ""
    saturate: dict[str, Any] | None = None  # a campaign's saturate block: effects on saturate.sustainable
    vary: str = "routing"  # the spec key whose values ``compare`` names
    variants: dict[str, Any] = field(default_factory=dict)  # name in compare -> value of ``vary``

    def value(self, name: str) -> Any:
        """The value of ``vary`` that ``compare``'s ``name`` stands for (the name itself by default)."""
        return self.variants.get(name, name)

    def name_of(self, value: str) -> str:
        """The ``compare`` name of a campaign cell's ``vary`` value, given as text (``str``)."""
        return next((n for n in self.compare if str(self.value(n)) == value), value)

    @property
    def runnable(self) -> bool:
        return self.spec is not None or self.computed is not None

    def sets(self, quick: bool) -> tuple[str, ...]:
        return (*self.scale, *self.quick) if quick else self.scale

    def reps(self, quick: bool) -> int:
        return self.quick_repetitions if quick else self.repetitions


def _notes(row: str, notes: Any) -> str:
    """A row's notes as one text: a list of parts (a YAML anchor shared by several rows, then what is
    the row's own) is joined with spaces, so an explanation the rows share is written once."""
    parts = notes if isinstance(notes, list) else [notes]
    if not all(isinstance(p, str) for p in parts):
        raise RowsError(f"row {row}: notes: give a text or a list of texts")
    return " ".join(parts)


def _row(doc: dict[str, Any]) -> Row:
    effects = tuple(Effect(**e) for e in doc.pop("effects", []))
    if "notes" in doc:
        doc["notes"] = _notes(str(doc.get("name")), doc["notes"])
    tuples: dict[str, Any] = {k: tuple(doc.pop(k)) for k in ("compare", "scale", "quick") if k in doc}
    row = Row(**doc, **tuples, effects=effects)
    if row.computed is not None and (row.spec is not None or row.computed not in COMPUTATIONS):
        raise RowsError(f"row {row.name}: computed: one of {', '.join(COMPUTATIONS)}, and no spec beside it")
    for e in row.effects:
        given = (not math.isnan(e.paper), e.at_most is not None, e.at_least is not None)
        if sum(given) != 1:
            raise RowsError(
                f"row {row.name}: effect {e.label}: give the paper's figure, at_most or at_least, one of them"
            )
        if {e.variant, e.baseline} - set(row.compare):
            raise RowsError(f"row {row.name}: effect {e.label}: {e.variant}/{e.baseline} not in compare")
    return row


def load_rows(path: Path = ROWS_FILE) -> list[Row]:
    doc = yaml.safe_load(path.read_text())
    rows = []
    for raw in doc["rows"]:
        try:
            rows.append(_row(dict(raw)))
        except TypeError as e:
            raise RowsError(f"{path}: row {raw.get('name')!r}: {e}") from None
    return rows


def select(rows: list[Row], names: list[str]) -> list[Row]:
    """The named rows (all when none is named); an unknown name is an error that lists the known ones."""
    known = {r.name: r for r in rows}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise RowsError(f"unknown row(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[n] for n in names] if names else rows
