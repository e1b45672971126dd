"""Subscription generators with a calibrated selectivity, and a covering mode.

Selectivity of a filter: the fraction of a run's quotes it matches. The
generator draws a *calibration sample* from the same quote source the
publishers use (:func:`scotbed.workloads.quotes.sample`) and, per
subscription, picks a template (a fixed part such as ``symbol = "IBM"`` plus
one or more quantile windows such as ``close between [lo, hi]``), then widens
the windows by bisection on the sample until the filter matches the target
fraction. Windows nest as they widen (bounds are rounded outwards), so the
sample selectivity is monotone in the width and bisection converges.

Covering mode (for the covering and selective-pruning issues) builds root
subscriptions and covered children, to a covering degree defined in
:mod:`scotbed.workloads.covering`: root r is ``change_pct between W_r and
close between H_r``; its children keep W_r and split H_r into adjacent close
slices, each calibrated to the target selectivity. Children of one root never
cover each other (their close slices only touch), and no two roots' W_r nest
(equal quantile width, distinct bounds), so no root covers another's
children: unsubscribing root r makes exactly its children new roots.

Everything is a pure function of the seed (and the source's quotes).

Every search ends: a selectivity no template can reach (each filter's categorical guard must
match at least :data:`GUARD_MARGIN` times the target) is refused before the search, and
:data:`MAX_MISSES` candidates in a row that miss the target end it with a ``ValueError`` naming
the workload key, the best reachable value and what to change.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scotbed.filters import Filter, Predicate
from scotbed.workloads.quotes import QuoteSource, sample
from scotbed.workloads.schema import Quote

if TYPE_CHECKING:
    from scotbed.matching.columnar import Columns as NotificationColumns

# Decimals a bound is rounded to, per windowed attribute (as many as the quotes carry).
_DECIMALS = {"close": 2, "open": 2, "high": 2, "low": 2, "change": 2, "change_pct": 2, "volume": 0}


class Columns:
    """A quote sample as one numpy column per attribute, for fast vectorised selectivity."""

    def __init__(self, quotes: Sequence[Quote]) -> None:
        if not quotes:
            raise ValueError("a calibration sample needs at least one quote")
        self.n = len(quotes)
        self.cols: dict[str, np.ndarray] = {}
        for name in quotes[0]:
            values = [q[name] for q in quotes]
            self.cols[name] = np.array(values, dtype=object if isinstance(values[0], str) else float)

    def mask(self, p: Predicate) -> np.ndarray:
        """Rows matching ``p``, for the ops the generator uses (same semantics as Predicate.matches)."""
        x = self.cols[p.attr]
        if p.op == "=":
            return np.asarray(x == p.value, dtype=bool)
        if p.op == "between":
            return np.asarray((x >= p.value[0]) & (x <= p.value[1]), dtype=bool)
        if p.op == ">=":
            return np.asarray(x >= p.value, dtype=bool)
        if p.op == "<=":
            return np.asarray(x <= p.value, dtype=bool)
        if p.op == "prefix":
            return np.array([s.startswith(p.value) for s in x], dtype=bool)
        raise ValueError(f"calibration does not support op {p.op!r}")

    def match(self, preds: Sequence[Predicate], within: np.ndarray | None = None) -> np.ndarray:
        m = np.ones(self.n, dtype=bool) if within is None else within.copy()
        for p in preds:
            m &= self.mask(p)
        return m


def selectivity(flt: Filter, quotes: Sequence[Quote]) -> float:
    """Fraction of ``quotes`` that ``flt`` matches, with the reference semantics of Filter.matches."""
    return sum(1 for q in quotes if flt.matches(q)) / len(quotes)


def mean_selectivity(filters: Sequence[Filter], quotes: Sequence[Mapping[str, Any]]) -> float:
    """The realised selectivity of a run: the mean over ``filters`` of the fraction of ``quotes``
    each matches (0 without filters or quotes). Counted over the quotes as numpy columns
    (:mod:`scotbed.matching.columnar`), else, for values numpy cannot compare exactly, matched one
    quote at a time with the counting engine: the same count either way."""
    from scotbed.matching.columnar import Columns, exact_filter
    from scotbed.matching.counting import CountingMatcher

    if not filters or not quotes:
        return 0.0
    cols = Columns.of(quotes) if all(exact_filter(f) for f in filters) else None
    if cols is not None:
        return columnar_selectivity(filters, cols)
    m = CountingMatcher()
    for k, f in enumerate(filters):
        m.add(k, f)
    m.rebuild()  # index them all now: below its pending bound the engine would scan every filter
    hits = sum(len(m.match(q)) for q in quotes)
    return hits / (len(filters) * len(quotes))


def columnar_selectivity(filters: Sequence[Filter], quotes: NotificationColumns) -> float:
    """:func:`mean_selectivity` of quotes held as columns (``filters`` exact, both not empty)."""
    return sum(quotes.count(f) for f in filters) / (len(filters) * quotes.n)


def _round_out(attr: str, lo: float, hi: float) -> tuple[float | int, float | int]:
    d = _DECIMALS.get(attr, 2)
    f = 10**d
    if d == 0:
        return math.floor(lo), math.ceil(hi)
    return math.floor(lo * f) / f, math.ceil(hi * f) / f


def _bounds(attr: str, srt: np.ndarray, center: float, width: float) -> tuple[float | int, float | int]:
    """The [center - width/2, center + width/2] quantiles of the sorted values ``srt``, rounded outwards."""
    n = len(srt)
    lo_q = min(max(center - width / 2, 0.0), 1.0)
    hi_q = min(max(center + width / 2, 0.0), 1.0)
    return _round_out(attr, float(srt[int(lo_q * (n - 1))]), float(srt[math.ceil(hi_q * (n - 1))]))


def _window(cal: Columns, rows: np.ndarray, attr: str, center: float, width: float) -> Predicate:
    """``attr between`` the quantile window of ``attr`` over ``rows``."""
    return Predicate(attr, "between", _bounds(attr, np.sort(cal.cols[attr][rows]), center, width))


def _calibrate(
    cal: Columns, rows: np.ndarray, fixed: list[Predicate], windows: list[tuple[str, float]], target: float
) -> tuple[Filter, float] | None:
    """Widen the windows until the filter's sample selectivity is closest to ``target``.

    ``rows`` are the sample rows the fixed predicates match.
    """
    if rows.sum() < target * 1.2 * cal.n:
        return None
    sub = {a: cal.cols[a][rows] for a, _ in windows}
    srt = {a: np.sort(v) for a, v in sub.items()}

    def build(width: float) -> tuple[Filter, float]:
        m = np.ones(len(next(iter(sub.values()))), dtype=bool)
        preds = list(fixed)
        for a, c in windows:
            lo, hi = _bounds(a, srt[a], c, width)
            m &= (sub[a] >= lo) & (sub[a] <= hi)
            preds.append(Predicate(a, "between", (lo, hi)))
        return Filter(tuple(preds)), m.sum() / cal.n

    lo, hi = 0.0, 1.0
    best = build(1.0)
    for _ in range(30):
        mid = (lo + hi) / 2
        f, s = build(mid)
        if abs(s - target) < abs(best[1] - target):
            best = (f, s)
        if s < target:
            lo = mid
        else:
            hi = mid
    return best


@dataclass(frozen=True)
class Calibration:
    """The sample a generator calibrates on, with the categorical frequencies it needs."""

    cal: Columns
    symbol_freq: dict[str, float]
    exchange_freq: dict[str, float]
    letter_freq: dict[str, float]
    masks: dict[Predicate, np.ndarray]

    @classmethod
    def of(cls, quotes: Sequence[Quote]) -> Calibration:
        n = len(quotes)

        def freq(key: str | None) -> dict[str, float]:
            c = Counter(str(q["symbol"])[:1] if key is None else str(q[key]) for q in quotes)
            return {k: v / n for k, v in sorted(c.items())}

        return cls(Columns(quotes), freq("symbol"), freq("exchange"), freq(None), {})

    def rows(self, preds: Sequence[Predicate]) -> np.ndarray:
        """Sample rows matching ``preds``, with per-predicate masks cached (templates reuse them)."""
        m = np.ones(self.cal.n, dtype=bool)
        for p in preds:
            if p not in self.masks:
                self.masks[p] = self.cal.mask(p)
            m &= self.masks[p]
        return m


#: a template's guard (a symbol, an exchange, a first letter) must match this many times the target
GUARD_MARGIN = 1.5
#: candidate filters (or covering roots) in a row that may miss before the search gives up; a
#: workload that can be met misses far fewer (a few hundred at most, with 5 symbols and 10-quote streams)
MAX_MISSES = 2000


# Every template has a categorical guard (a symbol, an exchange or a symbol's first letter), so
# quotes of a symbol outside the market (an HRP's, see plan.HRP_SYMBOL) never match it.
TEMPLATES = ("symbol-price", "exchange-price-volume", "prefix-change", "exchange-price-change")


def _candidate(
    c: Calibration, template: str, rng: random.Random, target: float
) -> tuple[list[Predicate], list[tuple[str, float]]] | None:
    def eligible(freq: dict[str, float]) -> list[str]:
        return [k for k, v in freq.items() if v >= target * GUARD_MARGIN]

    if template == "symbol-price":
        syms = eligible(c.symbol_freq)
        if not syms:
            return None
        return [Predicate("symbol", "=", rng.choice(syms))], [("close", rng.uniform(0.2, 0.8))]
    if template == "exchange-price-volume":
        exs = eligible(c.exchange_freq)
        if not exs:
            return None
        ex = rng.choice(exs)
        vols = np.sort(c.cal.cols["volume"][c.rows([Predicate("exchange", "=", ex)])])
        vmin = int(vols[int(rng.uniform(0.0, 0.5) * (len(vols) - 1))])
        fixed = [Predicate("exchange", "=", ex), Predicate("volume", ">=", vmin)]
        return fixed, [("close", rng.uniform(0.2, 0.8))]
    if template == "prefix-change":
        letters = eligible(c.letter_freq)
        if not letters:
            return None
        return [Predicate("symbol", "prefix", rng.choice(letters))], [("change_pct", rng.uniform(0.2, 0.8))]
    exs = eligible(c.exchange_freq)
    if not exs:
        return None
    windows = [("close", rng.uniform(0.2, 0.8)), ("change_pct", rng.uniform(0.2, 0.8))]
    return [Predicate("exchange", "=", rng.choice(exs))], windows


def calibration_sample(
    source: QuoteSource, seed: int, size: int = 50_000, stream_length: int = 1000
) -> list[Quote]:
    """The calibration sample for ``seed``: independent of every publisher's own stream seed."""
    return sample(source, size, seed=seed * 7919 + 17, stream_length=stream_length)


def generate(
    source: QuoteSource,
    n: int,
    selectivity: float = 0.02,
    seed: int = 0,
    calibration: Calibration | None = None,
) -> list[Filter]:
    """``n`` filters whose selectivity on the source's quotes is ``selectivity`` (a fraction in (0, 1))."""
    if not 0 < selectivity < 1:
        raise ValueError(f"selectivity is a fraction in (0, 1), got {selectivity}")
    c = calibration or Calibration.of(calibration_sample(source, seed))
    _check_reachable(c, selectivity)
    rng = random.Random(f"subscriptions:{seed}")
    out: list[Filter] = []
    misses = 0
    while len(out) < n:
        if misses >= MAX_MISSES:
            raise ValueError(
                f"workload.selectivity: {selectivity:g} could not be met: {MAX_MISSES} candidate filters "
                f"in a row missed it by more than 10% ({len(out)} of {n} found); the quotes take too few "
                "distinct values to cut windows that fine: raise workload.symbols or "
                "notifications_per_publisher, or choose another selectivity"
            )
        misses += 1
        cand = _candidate(c, rng.choice(TEMPLATES), rng, selectivity)
        if cand is None:
            continue
        res = _calibrate(c.cal, c.rows(cand[0]), cand[0], cand[1], selectivity)
        if res is not None and abs(res[1] - selectivity) <= 0.1 * selectivity:
            source.schema.check_filter(res[0])
            out.append(res[0])
            misses = 0
    return out


def _check_reachable(c: Calibration, selectivity: float) -> None:
    """Refuse a selectivity above what the broadest guard allows: every template's filter is guarded
    by one symbol, exchange or first letter, which must match :data:`GUARD_MARGIN` × the target."""
    kinds = {"symbol": c.symbol_freq, "exchange": c.exchange_freq, "first letter": c.letter_freq}
    kind, value, freq = max(
        ((kind, v, f) for kind, freqs in kinds.items() for v, f in freqs.items()), key=lambda x: x[2]
    )
    if freq < selectivity * GUARD_MARGIN:
        raise ValueError(
            f"workload.selectivity: {selectivity:g} cannot be reached by this workload: every filter is "
            f"guarded by one symbol, exchange or first letter, the most frequent ({kind} {value!r}) is in "
            f"{freq:.3g} of the quotes, and a guard must match {GUARD_MARGIN:g} × the selectivity; "
            f"at most {freq / GUARD_MARGIN:.3g} is reachable (more with another workload.symbols, "
            "zipf_s or csv)"
        )


@dataclass(frozen=True)
class CoveringSet:
    """Filters in covering mode; ``parent[i]`` is the root index covering filter i (None for roots)."""

    filters: tuple[Filter, ...]
    parent: tuple[int | None, ...]

    @property
    def roots(self) -> list[int]:
        return [i for i, p in enumerate(self.parent) if p is None]


def generate_covering(
    source: QuoteSource,
    n: int,
    degree: float,
    selectivity: float = 0.02,
    seed: int = 0,
    calibration: Calibration | None = None,
) -> CoveringSet:
    """``n`` filters in R = round(n / (degree + 1)) root families; children get ``selectivity``.

    The covering degree is exactly (n - R) / R, i.e. ``degree`` when n is a
    multiple of degree + 1 (children are spread over the roots as evenly as
    possible). Roots are listed first. Needs ``degree * selectivity <= 0.7``
    (a root's children must fit side by side in one close range).
    """
    if degree < 1:
        raise ValueError(f"covering degree must be >= 1, got {degree}")
    if not 0 < selectivity < 1:
        raise ValueError(f"selectivity is a fraction in (0, 1), got {selectivity}")
    kids_max = math.ceil(degree)
    if kids_max * selectivity > 0.7:
        raise ValueError(
            f"covering degree {degree} x selectivity {selectivity} = {kids_max * selectivity:.2f} > 0.7: "
            "a root's children cannot have that selectivity side by side; lower one of them"
        )
    n_roots = max(1, round(n / (degree + 1)))
    if n_roots >= n:
        raise ValueError(f"{n} subscriptions cannot hold roots with covering degree {degree}")
    c = calibration or Calibration.of(calibration_sample(source, seed))
    cal = c.cal
    rng = random.Random(f"covering:{seed}")
    kids = [(n - n_roots) // n_roots + (1 if r < (n - n_roots) % n_roots else 0) for r in range(n_roots)]
    change_width = min(0.95, max(0.3, 1.3 * max(kids) * selectivity))
    everything = np.ones(cal.n, dtype=bool)
    roots: list[Filter] = []
    families: list[list[Filter]] = []
    used_lo: set[float] = set()
    used_hi: set[float] = set()
    misses = 0
    while len(roots) < n_roots:
        if misses >= MAX_MISSES:
            raise ValueError(
                f"workload.covering: {n_roots} root subscriptions need as many distinct change_pct "
                f"windows; {MAX_MISSES} draws in a row found no new one ({len(roots)} found): lower "
                "workload.subscribers or raise workload.covering.degree"
            )
        misses += 1
        w = _window(
            cal, everything, "change_pct", rng.uniform(change_width / 2, 1 - change_width / 2), change_width
        )
        lo, hi = w.value
        if lo in used_lo or hi in used_hi:
            continue
        misses = 0
        rows = cal.mask(w)
        closes = np.sort(cal.cols["close"][rows])
        m = len(closes)
        share = (
            selectivity * cal.n / m
        )  # close-quantile width per child, if close and change were independent
        q = rng.uniform(0.0, max(0.0, 1.0 - 1.3 * share * kids[len(roots)]))
        slices: list[Filter] = []
        for _ in range(kids[len(roots)]):
            a = _round_out("close", float(closes[int(q * (m - 1))]), 0)[0]
            b_lo, b_hi = q, 1.0
            best: tuple[float, Filter, float] | None = None
            for _ in range(30):
                mid = (b_lo + b_hi) / 2
                b = _round_out("close", 0, float(closes[math.ceil(mid * (m - 1))]))[1]
                f = Filter((w, Predicate("close", "between", (a, b))))
                s = cal.match(f.predicates).sum() / cal.n
                if best is None or abs(s - selectivity) < abs(best[2] - selectivity):
                    best = (mid, f, s)
                if s < selectivity:
                    b_lo = mid
                else:
                    b_hi = mid
            assert best is not None
            q, f, _ = best
            slices.append(f)
        hull = (slices[0].predicates[1].value[0], slices[-1].predicates[1].value[1])
        used_lo.add(lo)
        used_hi.add(hi)
        roots.append(Filter((w, Predicate("close", "between", hull))))
        families.append(slices)
    filters = list(roots)
    parent: list[int | None] = [None] * n_roots
    for r, fam in enumerate(families):
        filters.extend(fam)
        parent.extend([r] * len(fam))
    for f in filters:
        source.schema.check_filter(f)
    return CoveringSet(tuple(filters), tuple(parent))


def run_filters(
    source: QuoteSource, n: int, selectivity: float, seed: int, per_publisher: int, degree: float | None
) -> list[Filter]:
    """A run's ``n`` filters (covering families when ``degree`` is set), calibrated on streams as long
    as the publishers' own (``per_publisher`` quotes): a price drifts along a stream, so a filter
    calibrated on long streams matches short ones at another rate."""
    stream = per_publisher if per_publisher > 0 else 1000
    cal = Calibration.of(calibration_sample(source, seed, stream_length=stream))
    if degree is not None:
        return list(generate_covering(source, n, degree, selectivity, seed, cal).filters)
    return generate(source, n, selectivity, seed, cal)
