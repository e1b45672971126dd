"""Synthetic Vinifera workloads (paper §V): distinct random ids, one subscription per peer with
uniform or Zipf-skewed ranges, events uniform or skewed the same way."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from scotbed.vinifera.config import PeerConfig
from scotbed.vinifera.interest import Event, Subscription

UNIFORM = "uniform"
SKEWED = "skewed"


@dataclass(frozen=True)
class Shape:
    """How values are drawn: ``uniform`` or ``skewed`` (Zipf over ``buckets`` equal buckets, the
    popular buckets at random places); ranges are ``width`` of the domain wide."""

    kind: str = UNIFORM
    buckets: int = 100
    zipf: float = 1.0
    width: float = 0.05


class Draw:
    """Values per attribute; a skewed attribute has one fixed popularity order of its buckets."""

    def __init__(self, cfg: PeerConfig, shape: Shape, rng: random.Random):
        self.cfg, self.shape, self.rng = cfg, shape, rng
        self.order = {a: rng.sample(range(shape.buckets), shape.buckets) for a in cfg.attrs}
        self.weights = [1.0 / (k + 1) ** shape.zipf for k in range(shape.buckets)]

    def value(self, attr: str) -> float:
        lo, hi = self.cfg.domain(attr)
        if self.shape.kind == UNIFORM:
            return self.rng.uniform(lo, hi)
        rank = self.rng.choices(range(self.shape.buckets), self.weights)[0]
        step = (hi - lo) / self.shape.buckets
        return lo + (self.order[attr][rank] + self.rng.random()) * step

    def subscription(self) -> Subscription:
        out = []
        for attr, lo, hi in self.cfg.domains:
            half = (hi - lo) * self.shape.width / 2
            c = self.value(attr)
            out.append((attr, max(lo, c - half), min(hi, c + half)))
        return Subscription(tuple(out))

    def event(self) -> Event:
        return tuple((a, self.value(a)) for a in self.cfg.attrs)


def distinct_ids(n: int, m: int, rng: random.Random, taken: Sequence[int] = ()) -> list[int]:
    ids: set[int] = set()
    while len(ids) < n:
        i = rng.randrange(m)
        if i not in taken:
            ids.add(i)
    return rng.sample(sorted(ids), n)
