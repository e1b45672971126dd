"""ℓMIT: request a link of more interest than the path's least-interest link, drop the cycle's
least-interest link. A link's interest is the mean of its two ends' estimates (each adds half)."""

from __future__ import annotations

from collections.abc import Sequence

from scotbed.selforg.costs import Costs, Edge
from scotbed.selforg.evaluate import ring_edges
from scotbed.selforg.heuristics.base import View
from scotbed.selforg.records import EVALUATE, Decision, Knobs
from scotbed.selforg.tree import path_edges


class MaximumInterest:
    def __init__(self, name: str) -> None:
        self.name = name

    def evaluate(self, path: Sequence[str], view: View, costs: Costs, knobs: Knobs) -> Decision:
        i, j = path[0], path[-1]
        i_ij = view.interest.get(j, 0.0)
        inputs: dict[str, object] = {"path": list(path), "I_ij": i_ij}
        if len(path) < 3:
            return Decision(EVALUATE, i, self.name, "skip", "already linked", inputs)
        known = [view.link_interest.get(e) for e in path_edges(path)]
        if any(v is None for v in known):
            return Decision(EVALUATE, i, self.name, "skip", "no estimate for a path link yet", inputs)
        least = min(v for v in known if v is not None)
        inputs["min_path_interest"] = least
        if i_ij > least * (1 + knobs.hysteresis) and i_ij > least:
            return Decision(EVALUATE, i, self.name, "request", "I_ij > min path interest", inputs)
        return Decision(EVALUATE, i, self.name, "skip", "I_ij <= min path interest", inputs)

    def contribute(self, me: str, ring: Sequence[str], view: View, costs: Costs) -> dict[Edge, float]:
        out = {}
        for e in ring_edges(ring):
            if me in e:
                other = e[1] if e[0] == me else e[0]
                out[e] = view.interest.get(other, 0.0) / 2
        return out
