"""Filters evaluated over a batch of notifications held as numpy columns, for counting matches in bulk.

Counting how many of a run's publications each filter matches (the realised selectivity) needs
no match sets, only counts: one boolean mask per predicate over all publications at once replaces
a per-publication call of an engine. The masks keep :meth:`scotbed.filters.Predicate.matches`'s
semantics exactly (an absent attribute fails, numbers and strings never compare with each other);
a batch whose values numpy cannot compare exactly (booleans, nested values, integers beyond 2**53)
is refused (:meth:`Columns.of` returns None) and the caller matches it with an engine instead.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scotbed.filters import Filter, Predicate

EXACT_INT = 2**53  # integers below this in magnitude are exact as float64
_COMPARE = {"=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _exact(v: object) -> bool:
    """A value numpy compares as Python does: a string, a float, or an int exact as float64."""
    if isinstance(v, str):
        return "\x00" not in v  # numpy's unicode strings drop trailing NULs
    if isinstance(v, float):
        return True
    return _is_number(v) and abs(v) < EXACT_INT  # type: ignore[arg-type]


class _Absent:
    """The value of an attribute a notification does not carry."""


_ABSENT = _Absent()
# the kind of each value by its exact type: a bool, None, a nested value or a subclass has none
_KIND = {_Absent: 0, int: 1, float: 2, str: 3}


@dataclass(frozen=True)
class Column:
    """One attribute over the batch: where present, where a number, where a string, and the values."""

    present: np.ndarray
    number: np.ndarray
    string: np.ndarray
    numbers: np.ndarray  # float64, NaN where not a number
    strings: np.ndarray  # numpy unicode, "" where not a string


class Columns:
    """A batch of notifications, one :class:`Column` per attribute."""

    def __init__(self, n: int, cols: dict[str, Column]) -> None:
        self.n = n
        self.cols = cols

    @classmethod
    def of(cls, batch: Sequence[Mapping[str, Any]]) -> Columns | None:
        """The batch as columns; None when a value is neither a string nor an exact number."""
        n = len(batch)
        raw: dict[str, list[Any]] = {}
        for i, attrs in enumerate(batch):
            for k, v in attrs.items():
                values = raw.get(k)
                if values is None:
                    values = raw[k] = [_ABSENT] * n
                values[i] = v
        cols = {}
        for k, values in raw.items():
            col = _column(values)
            if col is None:
                return None
            cols[k] = col
        return cls(n, cols)

    def mask(self, p: Predicate) -> np.ndarray:
        """The notifications ``p`` matches."""
        c = self.cols.get(p.attr)
        if c is None:
            return np.zeros(self.n, dtype=bool)
        if p.op == "exists":
            return c.present.copy()
        if p.op == "prefix":
            return c.string & np.char.startswith(c.strings, p.value)
        if p.op == "between":
            lo, hi = p.value
            kind, x = (c.number, c.numbers) if _is_number(lo) else (c.string, c.strings)
            with np.errstate(invalid="ignore"):
                return kind & (x >= lo) & (x <= hi)
        kind, x = (c.number, c.numbers) if _is_number(p.value) else (c.string, c.strings)
        with np.errstate(invalid="ignore"):
            if p.op == "!=":
                return c.present & (~kind | (x != p.value))
            return kind & _COMPARE[p.op](x, p.value)

    def matches(self, flt: Filter) -> np.ndarray:
        """The notifications ``flt`` matches (the empty filter matches all)."""
        m = np.ones(self.n, dtype=bool)
        for p in flt.predicates:
            m &= self.mask(p)
        return m

    def count(self, flt: Filter) -> int:
        """How many notifications ``flt`` matches."""
        return int(self.matches(flt).sum())


def exact_filter(flt: Filter) -> bool:
    """True when every bound of ``flt`` is a value numpy compares exactly."""
    for p in flt.predicates:
        values = p.value if p.op == "between" else () if p.op == "exists" else (p.value,)
        if not all(_exact(v) for v in values):
            return False
    return True


def _column(values: list[Any]) -> Column | None:
    """One attribute over a batch (``_ABSENT`` where not carried), kinds and values found in bulk; None
    when a value is not a string or an exact number."""
    n = len(values)
    try:
        kind = np.fromiter((_KIND[type(v)] for v in values), np.int8, n)
    except KeyError:
        return None
    ints, string = kind == 1, kind == 3
    number = ints | (kind == 2)
    numbers = np.full(n, np.nan)
    try:
        numbers[number] = [values[i] for i in np.flatnonzero(number).tolist()]
    except OverflowError:
        return None
    if (np.abs(numbers[ints]) >= EXACT_INT).any():
        return None
    texts = [values[i] if k == 3 else "" for i, k in enumerate(kind.tolist())]
    if "\x00" in "".join(texts):
        return None  # numpy's unicode strings drop trailing NULs
    return Column(kind != 0, number, string, numbers, np.array(texts, dtype=str))
