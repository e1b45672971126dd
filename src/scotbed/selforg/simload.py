"""The paper's workload and costs for the simulator (§5), drawn from one seeded generator.

Each notification type has one publisher broker and ``subscribers`` subscriber brokers; brokers
are picked with probability proportional to a per-broker load value drawn once. Publications of a
type arrive as a Poisson process; a subscription lives an exponential time and is then replaced
by one at another broker. Costs are uniform in [0, c_max] per pair and [0, p_max] per broker,
with c_max = (1 − α)·Γ and p_max = α·Γ when α is given (§5.3), else 10 and 10. scotbed draws
pair costs directly instead of from a BRITE physical topology.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from scotbed.selforg.costs import Costs, edge

C_MAX = 10.0
P_MAX = 10.0
GAMMA = 20.0


@dataclass(frozen=True)
class Workload:
    brokers: int = 100
    types: int = 50
    subscribers: int = 9
    publish_rate: float = 0.2
    unsubscribe_rate: float = 0.0004
    alpha: float | None = None

    def names(self) -> list[str]:
        return [f"b{n:03d}" for n in range(self.brokers)]

    def maxima(self) -> tuple[float, float]:
        if self.alpha is None:
            return C_MAX, P_MAX
        if not 0 <= self.alpha <= 1:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        return (1 - self.alpha) * GAMMA, self.alpha * GAMMA


def draw_links(names: Sequence[str], c_max: float, rng: random.Random) -> dict[tuple[str, str], float]:
    return {edge(u, v): rng.uniform(0, c_max) for n, u in enumerate(names) for v in names[n + 1 :]}


def draw_brokers(names: Sequence[str], p_max: float, rng: random.Random) -> dict[str, float]:
    return {v: rng.uniform(0, p_max) for v in names}


def draw_costs(names: Sequence[str], load: Workload, rng: random.Random) -> Costs:
    c_max, p_max = load.maxima()
    return Costs(links=draw_links(names, c_max, rng), brokers=draw_brokers(names, p_max, rng))


def weighted_pick(
    names: Sequence[str], weights: Sequence[float], exclude: set[str], rng: random.Random
) -> str:
    """One broker by load value, outside ``exclude``."""
    pool = [(n, w) for n, w in zip(names, weights, strict=True) if n not in exclude]
    return rng.choices([n for n, _ in pool], [w for _, w in pool])[0]
