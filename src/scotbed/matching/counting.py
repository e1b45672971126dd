"""The counting algorithm: a per-attribute predicate index, vectorised with numpy.

A notification satisfies a filter when it satisfies all of the filter's
predicates, so the engine counts, per filter, the predicates an event
satisfies and reports the filters whose count equals their predicate count.
For every attribute the event carries it looks up the satisfied predicates
in that attribute's index:

- ``=``: a hash map value → filters (separate maps for numbers and strings,
  so a string never equals a number; ``1 == 1.0`` as in Python);
- ``<``, ``<=``, ``>``, ``>=``: every range is a half-constraint (``x >= v``,
  ``x > v``, ``x <= v``, ``x < v``), kept sorted by bound. The satisfied ones for
  ``x`` are a prefix or a suffix of the sorted bounds, found by bisection over a
  Python list (exact int/float comparison, no float rounding) and taken as a
  numpy slice of filter slots. Numbers and strings have separate indexes;
- numeric ``between``: an interval, counted once. Those holding ``x`` are the
  ones with ``lo <= x`` (a prefix of the intervals sorted by ``lo``) and
  ``hi >= x`` (a suffix of those sorted by ``hi``): the shorter of the two is
  bisected and its other bound compared with numpy, so a narrow interval costs
  the count only when it holds ``x`` (two half-constraints would cost it about
  every other time). Bounds and values beyond float64's exact integers are
  compared in Python. A ``between`` of strings is two half-constraints;
- ``!=``: all ``!=`` predicates on the attribute count, minus those whose value
  equals ``x`` with the same kind (``!=`` is true on a type mismatch);
- ``prefix``: a hash map prefix → filters, probed with the event string's
  prefixes of the lengths that occur; ``exists``: every predicate counts.

A missing attribute contributes nothing, so its predicates are false. A NaN
attribute value satisfies no order or equality predicate and every ``!=``.
The slices are concatenated and counted with one ``numpy.bincount``.

Incremental updates: added filters wait in a small *pending* set that is
matched by scanning; removed ones become tombstones (required count -1). The
index is rebuilt lazily, at the next match, when either grows past its bound,
or once the matches since the last rebuild have scanned as many pending
filters as a rebuild indexes (rent or buy: a burst of subscriptions is
indexed once, and a table that stopped changing is never scanned for long).
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Hashable
from typing import Any

import numpy as np

from scotbed.filters import Attributes, Filter, Predicate

_EMPTY = np.zeros(0, dtype=np.int64)
PENDING_MIN, PENDING_MAX = 256, 2048
TOMBSTONES_MIN = 256


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class _Sorted:
    """Half-constraints of one kind, sorted by bound: a bisectable list and the filter slots in that order."""

    __slots__ = ("bounds", "slots")

    def __init__(self, pairs: list[tuple[Any, int]]) -> None:
        pairs.sort(key=lambda p: p[0])
        self.bounds = [b for b, _ in pairs]
        self.slots = np.fromiter((s for _, s in pairs), dtype=np.int64, count=len(pairs))


class _Ranges:
    """The four half-constraint kinds for one value kind (numbers or strings) of one attribute."""

    __slots__ = ("ge", "gt", "le", "lt")

    def __init__(self, halves: dict[str, list[tuple[Any, int]]]) -> None:
        self.ge = _Sorted(halves["ge"])  # satisfied when bound <= x
        self.gt = _Sorted(halves["gt"])  # bound < x
        self.le = _Sorted(halves["le"])  # bound >= x
        self.lt = _Sorted(halves["lt"])  # bound > x

    def collect(self, x: Any, out: list[np.ndarray]) -> None:
        if self.ge.bounds:
            out.append(self.ge.slots[: bisect.bisect_right(self.ge.bounds, x)])
        if self.gt.bounds:
            out.append(self.gt.slots[: bisect.bisect_left(self.gt.bounds, x)])
        if self.le.bounds:
            out.append(self.le.slots[bisect.bisect_left(self.le.bounds, x) :])
        if self.lt.bounds:
            out.append(self.lt.slots[bisect.bisect_right(self.lt.bounds, x) :])


#: integers up to this magnitude are exact in float64, so numpy compares them exactly
EXACT_INT = 2**53


def _exact_float(v: object) -> bool:
    if isinstance(v, float):
        return True
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) <= EXACT_INT


def _interval(p: Predicate) -> bool:
    """A ``between`` the interval index takes: both bounds numbers that float64 holds exactly."""
    return p.op == "between" and all(_exact_float(b) for b in p.value)


class _Intervals:
    """Numeric ``between`` predicates of one attribute: sorted by ``lo`` and by ``hi``."""

    __slots__ = ("by_hi", "by_lo", "exact")

    def __init__(self, items: list[tuple[Any, Any, int]]) -> None:
        self.exact = items  # (lo, hi, slot): the Python values, for an x float64 cannot hold exactly
        self.by_lo = _Aligned(sorted(items, key=lambda t: t[0]), key=0, other=1)
        self.by_hi = _Aligned(sorted(items, key=lambda t: t[1]), key=1, other=0)

    def collect(self, x: Any, out: list[np.ndarray]) -> None:
        if not _exact_float(x):
            hits = [slot for lo, hi, slot in self.exact if lo <= x <= hi]
            if hits:
                out.append(np.asarray(hits, dtype=np.int64))
            return
        k = bisect.bisect_right(self.by_lo.keys, x)  # lo <= x: the first k by lo
        j = bisect.bisect_left(self.by_hi.keys, x)  # hi >= x: from j on by hi
        n = len(self.exact)
        if k == 0 or j == n:
            return
        xf = float(x)
        if k <= n - j:
            sel = self.by_lo.slots[:k][self.by_lo.others[:k] >= xf]
        else:
            sel = self.by_hi.slots[j:][self.by_hi.others[j:] <= xf]
        if sel.size:
            out.append(sel)


class _Aligned:
    """Intervals in one order: that bound as a bisectable list, the other bound and the slots as arrays."""

    __slots__ = ("keys", "others", "slots")

    def __init__(self, items: list[tuple[Any, Any, int]], key: int, other: int) -> None:
        self.keys = [t[key] for t in items]
        self.others = np.fromiter((float(t[other]) for t in items), dtype=np.float64, count=len(items))
        self.slots = np.fromiter((t[2] for t in items), dtype=np.int64, count=len(items))


def _arrays(d: dict[Any, list[int]]) -> dict[Any, np.ndarray]:
    return {k: np.asarray(v, dtype=np.int64) for k, v in d.items()}


class _AttrIndex:
    """Every predicate on one attribute, indexed by operator and value kind."""

    def __init__(self, preds: list[tuple[int, Predicate]]) -> None:
        exists: list[int] = []
        eq_num: defaultdict[Any, list[int]] = defaultdict(list)
        eq_str: defaultdict[Any, list[int]] = defaultdict(list)
        ne_all: list[int] = []
        ne_num: defaultdict[Any, list[int]] = defaultdict(list)
        ne_str: defaultdict[Any, list[int]] = defaultdict(list)
        prefix: defaultdict[str, list[int]] = defaultdict(list)
        halves: dict[bool, dict[str, list[tuple[Any, int]]]] = {
            kind: {"ge": [], "gt": [], "le": [], "lt": []} for kind in (True, False)
        }
        intervals: list[tuple[Any, Any, int]] = []
        for slot, p in preds:
            op, v = p.op, p.value
            if op == "exists":
                exists.append(slot)
            elif op == "=":
                (eq_num if _is_number(v) else eq_str)[v].append(slot)
            elif op == "!=":
                ne_all.append(slot)
                (ne_num if _is_number(v) else ne_str)[v].append(slot)
            elif op == "prefix":
                prefix[v].append(slot)
            elif _interval(p):
                intervals.append((v[0], v[1], slot))
            elif op == "between":
                h = halves[_is_number(v[0])]
                h["ge"].append((v[0], slot))
                h["le"].append((v[1], slot))
            else:
                h = halves[_is_number(v)]
                kind = {">=": "ge", ">": "gt", "<=": "le", "<": "lt"}[op]
                h[kind].append((v, slot))
        self.exists = np.asarray(exists, dtype=np.int64)
        self.eq_num, self.eq_str = _arrays(eq_num), _arrays(eq_str)
        self.ne_all = np.asarray(ne_all, dtype=np.int64)
        self.ne_num, self.ne_str = _arrays(ne_num), _arrays(ne_str)
        self.prefix = _arrays(prefix)
        self.prefix_lengths = sorted({len(k) for k in prefix})
        self.num = _Ranges(halves[True]) if any(halves[True].values()) else None
        self.str = _Ranges(halves[False]) if any(halves[False].values()) else None
        self.intervals = _Intervals(intervals) if intervals else None

    def collect(self, x: Any, pos: list[np.ndarray], neg: list[np.ndarray]) -> None:
        if self.exists.size:
            pos.append(self.exists)
        if self.ne_all.size:
            pos.append(self.ne_all)
        if isinstance(x, str):
            hit = self.eq_str.get(x)
            if hit is not None:
                pos.append(hit)
            hit = self.ne_str.get(x)
            if hit is not None:
                neg.append(hit)
            if self.str is not None:
                self.str.collect(x, pos)
            for n in self.prefix_lengths:
                if n > len(x):
                    break
                hit = self.prefix.get(x[:n])
                if hit is not None:
                    pos.append(hit)
        elif _is_number(x):
            if isinstance(x, float) and math.isnan(x):
                return
            hit = self.eq_num.get(x)
            if hit is not None:
                pos.append(hit)
            hit = self.ne_num.get(x)
            if hit is not None:
                neg.append(hit)
            if self.num is not None:
                self.num.collect(x, pos)
            if self.intervals is not None:
                self.intervals.collect(x, pos)


def _weight(p: Predicate) -> int:
    """The counts a satisfied predicate adds: a ``between`` as two half-constraints adds two."""
    return 2 if p.op == "between" and not _interval(p) else 1


class CountingMatcher:
    def __init__(self) -> None:
        self._filters: dict[Hashable, Filter] = {}
        self._pending: dict[Hashable, Filter] = {}
        self._slot: dict[Hashable, int] = {}
        self._key_array = np.empty(0, dtype=object)  # the key of each slot
        self._required = np.zeros(0, dtype=np.int64)
        self._index: dict[str, _AttrIndex] = {}
        self._dead = 0
        self._scanned = 0  # pending filters scanned by the matches since the last rebuild

    # --- Matcher interface ------------------------------------------------------------------

    def add(self, key: Hashable, flt: Filter) -> None:
        if key in self._filters:
            self.remove(key)
        self._filters[key] = flt
        self._pending[key] = flt

    def remove(self, key: Hashable) -> bool:
        if self._filters.pop(key, None) is None:
            return False
        if self._pending.pop(key, None) is None:
            slot = self._slot.pop(key)
            self._required[slot] = -1
            self._dead += 1
        return True

    def match(self, attrs: Attributes) -> list[Hashable]:
        if self._needs_rebuild():
            self.rebuild()
        out: list[Hashable] = []
        if self._key_array.size:
            pos: list[np.ndarray] = []
            neg: list[np.ndarray] = []
            index = self._index
            for attr, x in attrs.items():
                ai = index.get(attr)
                if ai is not None:
                    ai.collect(x, pos, neg)
            n = self._key_array.size
            if pos:
                counts = np.bincount(np.concatenate(pos) if len(pos) > 1 else pos[0], minlength=n)
                if neg:
                    counts -= np.bincount(np.concatenate(neg) if len(neg) > 1 else neg[0], minlength=n)
                hits = np.flatnonzero(counts == self._required)
            else:
                hits = np.flatnonzero(self._required == 0)
            out = self._key_array[hits].tolist()
        if self._pending:
            self._scanned += len(self._pending)
            out.extend(k for k, f in self._pending.items() if f.matches(attrs))
        return out

    def __len__(self) -> int:
        return len(self._filters)

    def __contains__(self, key: object) -> bool:
        return key in self._filters

    # --- index maintenance ---------------------------------------------------------------------

    def _needs_rebuild(self) -> bool:
        live = len(self._filters)
        pending_bound = min(PENDING_MAX, max(PENDING_MIN, live // 64))
        return (
            len(self._pending) > pending_bound
            or self._dead > max(TOMBSTONES_MIN, live // 2)
            or (bool(self._pending) and self._scanned >= live)
        )

    def rebuild(self) -> None:
        """Index every live filter from scratch (drops tombstones, empties the pending set)."""
        keys = list(self._filters)
        required = np.empty(len(keys), dtype=np.int64)
        per_attr: defaultdict[str, list[tuple[int, Predicate]]] = defaultdict(list)
        for slot, key in enumerate(keys):
            preds = self._filters[key].predicates
            required[slot] = sum(_weight(p) for p in preds)
            for p in preds:
                per_attr[p.attr].append((slot, p))
        self._key_array = np.fromiter(keys, dtype=object, count=len(keys))
        self._slot = {k: i for i, k in enumerate(keys)}
        self._required = required
        self._index = {attr: _AttrIndex(preds) for attr, preds in per_attr.items()}
        self._pending = {}
        self._dead = 0
        self._scanned = 0
