"""Subscriptions, events, the utility (Jaccard, Function I) and the primary attribute (Algorithm 1).

A subscription constrains some attributes to closed ranges; an event has a value for every attribute.
Attribute order (the attribute index) is the order of the workload's domains.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

Range = tuple[float, float]
Event = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Subscription:
    """Closed ranges per constrained attribute, in attribute order."""

    ranges: tuple[tuple[str, float, float], ...]

    def get(self, attr: str) -> Range | None:
        for a, lo, hi in self.ranges:
            if a == attr:
                return (lo, hi)
        return None

    def ranges_of(self, attr: str) -> Range:
        """The range on a constrained attribute (KeyError otherwise)."""
        r = self.get(attr)
        if r is None:
            raise KeyError(attr)
        return r

    @property
    def attrs(self) -> tuple[str, ...]:
        return tuple(a for a, _, _ in self.ranges)

    def matches(self, event: Event) -> bool:
        values = dict(event)
        return all(a in values and lo <= values[a] <= hi for a, lo, hi in self.ranges)


def overlap(a: Range | None, b: Range | None) -> bool:
    return a is not None and b is not None and a[0] <= b[1] and b[0] <= a[1]


def jaccard(a: Range | None, b: Range | None) -> float:
    """Utility(p, q) = |S_p ∩ S_q| / |S_p ∪ S_q| over one attribute (lengths of closed ranges)."""
    if not overlap(a, b):
        return 0.0
    assert a is not None and b is not None
    inter = min(a[1], b[1]) - max(a[0], b[0])
    whole = max(a[1], b[1]) - min(a[0], b[0])
    return 1.0 if whole == 0 else inter / whole


def primary_attribute(own: Subscription, others: Iterable[Subscription], order: Sequence[str]) -> str | None:
    """Algorithm 1 as the readings fix it: rank each constrained attribute by how many candidates'
    subscriptions overlap on it; the largest wins, ties to the lowest attribute index."""
    subs = list(others)
    return most_overlapped({a: attribute_rank(own.ranges_of(a), subs, a) for a in own.attrs}, order)


def most_overlapped(rank: Mapping[str, int], order: Sequence[str]) -> str | None:
    """The attribute of highest rank, ties to the lowest index in ``order``."""
    ranked = [a for a in order if a in rank]
    return max(ranked, key=lambda a: (rank[a], -ranked.index(a)), default=None)


def overlapping_attrs(own: Subscription, other: Subscription | None) -> tuple[str, ...]:
    """The attributes on which ``other`` overlaps ``own``."""
    return tuple(a for a in own.attrs if other is not None and overlap(own.get(a), other.get(a)))


def attribute_rank(mine: Range, subs: Iterable[Subscription], attr: str) -> int:
    """How many of ``subs`` overlap ``mine`` on ``attr`` (Algorithm 1, lines 10-11)."""
    return sum(1 for s in subs if overlap(mine, s.get(attr)))
