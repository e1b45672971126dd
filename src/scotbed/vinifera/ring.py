"""Ring arithmetic of the Vinifera id space: ids and hashed points are integers in [0, M).

A peer is responsible for the points (pred, self]; the rendezvous (RV) of a point is the first id
≥ it, wrapping (readings). Intervals are closed integer intervals ``(lo, hi)`` with lo ≤ hi on the
line [0, M); a ring interval that wraps is two of them.
"""

from __future__ import annotations

import bisect
import zlib
from collections.abc import Iterable, Sequence

Interval = tuple[int, int]


def cw(a: int, b: int, m: int) -> int:
    """Clockwise distance from ``a`` to ``b`` on a ring of size ``m``."""
    return (b - a) % m


def ophash(v: float, lo: float, hi: float, m: int) -> int:
    """Order-preserving hash h(v) = floor((v − min)/(max − min) · M), the domain's top in the last id."""
    return min(max(int((v - lo) / (hi - lo) * m), 0), m - 1)


def name_hash(name: str, m: int) -> int:
    """The baseline's (Ferry-like) rendezvous point of an attribute: a stable hash of its name."""
    return zlib.crc32(name.encode()) % m


def rendezvous(point: int, ids: Sequence[int]) -> int:
    """The first id ≥ ``point`` in the sorted ``ids``, wrapping to the smallest."""
    i = bisect.bisect_left(ids, point)
    return ids[i % len(ids)]


def owned(pred: int, me: int, m: int) -> list[Interval]:
    """The points (pred, me] a peer answers for, as line intervals; a lone peer owns the whole ring."""
    if pred == me:
        return [(0, m - 1)]
    if pred < me:
        return [(pred + 1, me)]
    return [iv for iv in ((pred + 1, m - 1), (0, me)) if iv[0] <= iv[1]]


def contains(iv: Interval, p: int) -> bool:
    return iv[0] <= p <= iv[1]


def in_any(ivs: Iterable[Interval], p: int) -> bool:
    return any(contains(iv, p) for iv in ivs)


def subtract(iv: Interval, cuts: Iterable[Interval]) -> list[Interval]:
    """``iv`` without the points of ``cuts``, in order."""
    rest = [iv]
    for c_lo, c_hi in cuts:
        nxt = []
        for lo, hi in rest:
            if c_hi < lo or c_lo > hi:
                nxt.append((lo, hi))
                continue
            if lo < c_lo:
                nxt.append((lo, c_lo - 1))
            if c_hi < hi:
                nxt.append((c_hi + 1, hi))
        rest = nxt
    return rest


def split_at(iv: Interval, targets: Sequence[int]) -> list[tuple[int, Interval]]:
    """Algorithm 2's split, as the readings fix it: with sorted targets t1 < … < tk inside ``iv``,
    t1 gets [lo, t1], t_i gets (t_{i−1}, t_i] and the last also gets the rest up to hi."""
    out = []
    lo = iv[0]
    for i, t in enumerate(targets):
        hi = iv[1] if i == len(targets) - 1 else t
        out.append((t, (lo, hi)))
        lo = t + 1
    return out


def union(ivs: Iterable[Interval]) -> list[Interval]:
    """Aggregate intervals (covering, Fig. 2b): the sorted union, touching ones merged."""
    out: list[Interval] = []
    for lo, hi in sorted(ivs):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out
