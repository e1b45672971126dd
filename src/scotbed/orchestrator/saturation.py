"""Is a publish rate sustainable? The criterion and the bisection of ``scotbed saturate``, without I/O.

A run is *sustainable* (Gryphon's "not overloaded", PADRES' maximum sustainable rate) when, over the
measuring window (the publish phase after a warm-up fraction):

1. delivery keeps up with generation: of the deliveries of notifications due in the window, at least
   ``keep_up_min`` happen before the window ends plus ``slack_s``;
2. no output queue grows: the least-squares slope of every output queue's sampled length over the
   window is at most ``growth_max`` envelopes/s, or the queue never exceeds ``queue_floor`` envelopes.

The bisection keeps ``lo`` sustainable and ``hi`` not, and stops when ``hi - lo <= tolerance * lo`` or
after ``max_probes`` runs; probes already measured (a resumed search) are reused, and the rates it asks
for are a pure function of the bounds, so a resumed search asks for the same ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Criterion:
    warmup_fraction: float = 0.3  # of the publish span, not measured
    keep_up_min: float = 0.95  # fraction of the window's deliveries made in time
    slack_s: float = 1.0  # a delivery within this long after the window's end is in time
    growth_max: float = 1.0  # envelopes/s an output queue may grow by over the window
    queue_floor: int = 20  # a queue never longer than this does not count as growing

    def describe(self) -> str:
        return (
            f"sustainable = over the publish phase after its first {self.warmup_fraction:.0%}, "
            f">= {self.keep_up_min:.0%} of the deliveries made by the window's end + {self.slack_s:g} s, "
            f"and every output queue grows <= {self.growth_max:g} envelopes/s "
            f"(or stays <= {self.queue_floor} envelopes)"
        )


@dataclass(frozen=True)
class Verdict:
    sustainable: bool
    keep_up: float  # fraction of the window's deliveries made in time (1.0 when there were none)
    max_growth: float  # the largest output-queue slope (envelopes/s) among queues above the floor
    worst_queue: str  # broker->link of that slope ("" when none)
    max_queue: int  # the longest output queue sampled in the window
    window_s: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (t, y) points; 0 for fewer than two distinct times."""
    n = len(points)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    return sum((t - mt) * (y - my) for t, y in points) / var


def judge(
    intended_ns: Mapping[str, int],
    deliveries: Iterable[tuple[str, int]],
    queues: Mapping[str, list[tuple[int, int]]],
    criterion: Criterion,
) -> Verdict:
    """``intended_ns``: pub_id -> when it was due; ``deliveries``: (pub_id, ts_ns);
    ``queues``: "broker->link" -> [(ts_ns, length)] of every output queue."""
    if not intended_ns:
        return Verdict(False, 0.0, 0.0, "", 0, 0.0)
    first, last = min(intended_ns.values()), max(intended_ns.values())
    start = first + int((last - first) * criterion.warmup_fraction)
    deadline = last + int(criterion.slack_s * 1e9)
    due = in_time = 0
    for pub_id, ts in deliveries:
        t = intended_ns.get(pub_id)
        if t is None or not start <= t <= last:
            continue
        due += 1
        in_time += ts <= deadline
    keep_up = in_time / due if due else 1.0
    max_growth, worst, longest = 0.0, "", 0
    for name, samples in queues.items():
        window = [(ts / 1e9, float(n)) for ts, n in samples if start <= ts <= last]
        if not window:
            continue
        top = int(max(n for _, n in window))
        longest = max(longest, top)
        if top <= criterion.queue_floor:
            continue
        s = slope(window)
        if s > max_growth:
            max_growth, worst = s, name
    ok = keep_up >= criterion.keep_up_min and max_growth <= criterion.growth_max
    return Verdict(
        ok, round(keep_up, 4), round(max_growth, 3), worst, longest, round((last - start) / 1e9, 3)
    )


@dataclass(frozen=True)
class Search:
    lo: float
    hi: float
    tolerance: float = 0.1
    max_probes: int = 8


def bisect_rate(search: Search, probe: Callable[[float], bool]) -> tuple[float | None, float | None]:
    """(highest sustainable rate found, lowest unsustainable one); None where the bound was not reached.

    ``probe(rate)`` runs (or recalls) one short run and says whether it was sustainable.
    """
    lo, hi = search.lo, search.hi
    probes = 0
    if not probe(lo):
        return None, lo
    probes += 1
    if probe(hi):
        return hi, None
    probes += 1
    while hi - lo > search.tolerance * lo and probes < search.max_probes:
        mid = round((lo + hi) / 2, 6)
        if probe(mid):
            lo = mid
        else:
            hi = mid
        probes += 1
    return lo, hi


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
