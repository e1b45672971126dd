"""The topology heuristics by spec name (``topology.self_organising.heuristic``); the one home of
these names."""

from __future__ import annotations

from collections.abc import Callable

from scotbed.selforg.heuristics.base import Heuristic, View
from scotbed.selforg.heuristics.ci import CostAndInterest
from scotbed.selforg.heuristics.lmit import MaximumInterest
from scotbed.selforg.heuristics.lmst import MinimumSpanning

HEURISTICS: dict[str, Callable[[str], Heuristic]] = {
    "ci": CostAndInterest,
    "lmst": MinimumSpanning,
    "lmit": MaximumInterest,
}


def heuristic(name: str) -> Heuristic:
    if name not in HEURISTICS:
        raise ValueError(f"unknown heuristic {name!r}; known: {sorted(HEURISTICS)}")
    return HEURISTICS[name](name)


__all__ = ["HEURISTICS", "Heuristic", "View", "heuristic"]
