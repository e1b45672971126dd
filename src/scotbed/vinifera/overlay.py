"""Overlay construction: Cyclon peer sampling and T-Man ranking of ring, friend and small-world links.

Pure functions and one small view class; the peer calls them on every gossip exchange.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from scotbed.vinifera.interest import jaccard
from scotbed.vinifera.messages import Desc


def freshest(descs: Iterable[Desc], me: int) -> dict[int, Desc]:
    """One descriptor per peer other than ``me``, the highest id version winning."""
    out: dict[int, Desc] = {}
    for d in descs:
        if d.name != me and (d.name not in out or d.ver > out[d.name].ver):
            out[d.name] = d
    return out


@dataclass
class Cyclon:
    """Cyclon's view: descriptors with ages; shuffle with the oldest, swap ``shuffle_len`` entries."""

    size: int
    shuffle_len: int
    view: dict[int, tuple[Desc, int]] = field(default_factory=dict)

    def descs(self) -> list[Desc]:
        return [d for d, _ in self.view.values()]

    def start(self, me: Desc, rng: random.Random) -> tuple[int, tuple[Desc, ...]] | None:
        """Age the view, take the oldest out and offer it a sample plus ourselves (age 0)."""
        if not self.view:
            return None
        self.view = {n: (d, a + 1) for n, (d, a) in self.view.items()}
        oldest = max(self.view, key=lambda n: (self.view[n][1], n))
        del self.view[oldest]
        sent = self._sample(self.shuffle_len - 1, rng)
        return oldest, (me, *sent)

    def answer(self, me: int, received: Sequence[Desc], rng: random.Random) -> tuple[Desc, ...]:
        """The reply to a shuffle: a sample of our view; then merge what we got."""
        sent = self._sample(self.shuffle_len, rng)
        self.merge(me, received, sent)
        return sent

    def merge(self, me: int, received: Sequence[Desc], sent: Sequence[Desc]) -> None:
        """Keep new entries: fill free slots first, then replace the entries we sent away."""
        replaceable = [d.name for d in sent if d.name in self.view]
        for d in received:
            if d.name == me:
                continue
            if d.name in self.view:
                old, age = self.view[d.name]
                if d.ver > old.ver:
                    self.view[d.name] = (d, age)
                continue
            if len(self.view) >= self.size:
                if not replaceable:
                    continue
                del self.view[replaceable.pop()]
            self.view[d.name] = (d, 0)

    def drop(self, name: int) -> None:
        self.view.pop(name, None)

    def _sample(self, k: int, rng: random.Random) -> tuple[Desc, ...]:
        names = sorted(self.view)
        return tuple(self.view[n][0] for n in rng.sample(names, min(k, len(names))))


def ring_neighbours(me: Desc, cands: Iterable[Desc], m: int, k: int) -> tuple[list[Desc], list[Desc]]:
    """T-Man's ring ranking: the ``k`` nearest successors (clockwise) and predecessors, nearest first."""
    others = [d for d in cands if d.id != me.id]
    succs = heapq.nsmallest(k, others, key=lambda d: (d.id - me.id) % m)
    preds = heapq.nsmallest(k, others, key=lambda d: (me.id - d.id) % m)
    return succs, preds


def utility_on(me: Desc, attr: str | None) -> Callable[[Desc], float]:
    """Function I on the primary attribute, as a function of the candidate."""
    mine = me.sub.get(attr) if me.sub is not None and attr is not None else None
    return lambda d: jaccard(mine, d.sub.get(attr) if d.sub is not None and attr is not None else None)


def friends(me: Desc, cands: Iterable[Desc], utility: Callable[[Desc], float], k: int, m: int) -> list[Desc]:
    """Up to ``k`` candidates of positive utility on the primary attribute, highest first; ties to the
    nearer clockwise, then to the lower name. Slots left free go to small-world links."""
    if k <= 0 or me.sub is None:
        return []
    liked = [d for d in cands if utility(d) > 0]
    return heapq.nsmallest(k, liked, key=lambda d: (-utility(d), (d.id - me.id) % m, d.name))


def harmonic_distances(k: int, m: int, rng: random.Random) -> list[float]:
    """Kleinberg's distances: log-uniform on [1, M), i.e. probability ∝ 1 / distance."""
    return [math.exp(rng.random() * math.log(m)) for _ in range(k)]


def small_world(
    me: Desc, cands: Sequence[Desc], targets: Sequence[float], m: int, spacing: float = 1.0
) -> list[Desc]:
    """Small-world links: for each drawn clockwise distance, the candidate nearest to it (in log
    distance); as the candidates improve with gossip, the links converge to Kleinberg's.

    Kleinberg's 1/d is over distances between *peers*: a drawn distance below the ring ``spacing``
    (M/N, estimated by the caller) can only land on the successor, so the draws on [1, M) are mapped
    log-linearly onto [spacing, M)."""
    out: list[Desc] = []
    pool = [d for d in cands if d.id != me.id]
    lo = math.log(max(1.0, min(spacing, m - 1)))
    for t in targets:
        if not pool:
            break
        aim = lo + (math.log(m) - lo) * math.log(t) / math.log(m)
        best = min(pool, key=lambda d: (abs(math.log((d.id - me.id) % m) - aim), d.name))
        out.append(best)
        pool.remove(best)
    return out
