"""The measured effect of a row (relative change, paired by repetition, mean with a 95 % t interval)
and whether it agrees with the paper's in direction and rough size."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scotbed.analysis.stats import MeanCI, mean_ci
from scotbed.orchestrator.reproduce.rows import Effect

#: "rough size" agrees when the measured change is within this factor of the paper's
SIZE_FACTOR = 2.0
AGREES = "agrees"
DIRECTION_ONLY = "direction only"
DISAGREES = "disagrees"
INCONCLUSIVE = "inconclusive"
NO_DATA = "no data"


def metric(summary: Mapping[str, Any], path: str) -> float | None:
    """A number in summary.json by its dotted path (None when absent)."""
    node: Any = summary
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return float(node) if isinstance(node, int | float) else None


def relative_changes(effect: Effect, summaries: Mapping[tuple[str, int], Mapping[str, Any]]) -> list[float]:
    """(variant − baseline) / baseline for every repetition that has both runs and a non-zero baseline."""
    out = []
    for (routing, rep), s in sorted(summaries.items()):
        if routing != effect.variant or (effect.baseline, rep) not in summaries:
            continue
        v, b = metric(s, effect.metric), metric(summaries[(effect.baseline, rep)], effect.metric)
        if v is not None and b:
            out.append((v - b) / b)
    return out


@dataclass(frozen=True)
class Judged:
    effect: Effect
    measured: MeanCI
    verdict: str


def judge(effect: Effect, changes: list[float]) -> Judged:
    """``agrees`` (direction and size within :data:`SIZE_FACTOR`), ``direction only``, ``disagrees``
    (opposite direction), ``inconclusive`` (the interval spans zero), ``no data``; against a stated
    bound (``at_most`` or ``at_least``): ``agrees`` on its side, ``disagrees`` beyond it,
    ``inconclusive`` when the interval spans it."""
    ci = mean_ci(changes)
    if ci.n == 0 or math.isnan(ci.mean):
        return Judged(effect, ci, NO_DATA)
    if effect.at_most is not None:  # a bound the paper states in words: within it, or not
        if ci.n > 1 and ci.low <= effect.at_most < ci.high:
            return Judged(effect, ci, INCONCLUSIVE)
        return Judged(effect, ci, AGREES if ci.mean <= effect.at_most else DISAGREES)
    if effect.at_least is not None:
        if ci.n > 1 and ci.low < effect.at_least <= ci.high:
            return Judged(effect, ci, INCONCLUSIVE)
        return Judged(effect, ci, AGREES if ci.mean >= effect.at_least else DISAGREES)
    if ci.n > 1 and ci.low <= 0 <= ci.high:
        return Judged(effect, ci, INCONCLUSIVE)
    if (ci.mean < 0) != (effect.paper < 0):
        return Judged(effect, ci, DISAGREES)
    ratio = abs(ci.mean) / abs(effect.paper) if effect.paper else math.inf
    return Judged(effect, ci, AGREES if 1 / SIZE_FACTOR <= ratio <= SIZE_FACTOR else DIRECTION_ONLY)
