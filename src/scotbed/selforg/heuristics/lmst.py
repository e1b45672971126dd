"""ℓMST: request a link cheaper than the costliest link on the path, drop the cycle's costliest link.

Each broker adds −c_e/2 for its two cycle links, so the least summed entry is the costliest link.
"""

from __future__ import annotations

from collections.abc import Sequence

from scotbed.selforg.costs import Costs, Edge
from scotbed.selforg.evaluate import ring_edges
from scotbed.selforg.heuristics.base import View
from scotbed.selforg.records import EVALUATE, Decision, Knobs
from scotbed.selforg.tree import path_edges


class MinimumSpanning:
    def __init__(self, name: str) -> None:
        self.name = name

    def evaluate(self, path: Sequence[str], view: View, costs: Costs, knobs: Knobs) -> Decision:
        i, j = path[0], path[-1]
        c_ij = costs.link(i, j)
        inputs: dict[str, object] = {"path": list(path), "c_ij": c_ij}
        if len(path) < 3:
            return Decision(EVALUATE, i, self.name, "skip", "already linked", inputs)
        worst = max(costs.link(*e) for e in path_edges(path))
        inputs["max_path_cost"] = worst
        if c_ij < worst * (1 - knobs.hysteresis):
            return Decision(EVALUATE, i, self.name, "request", "c_ij < max path cost", inputs)
        return Decision(EVALUATE, i, self.name, "skip", "c_ij >= max path cost", inputs)

    def contribute(self, me: str, ring: Sequence[str], view: View, costs: Costs) -> dict[Edge, float]:
        return {e: -costs.link(*e) / 2 for e in _incident(me, ring)}


def _incident(me: str, ring: Sequence[str]) -> list[Edge]:
    return [e for e in ring_edges(ring) if me in e]
