"""The cost-and-interest heuristic: Eq. 7 to request, Eq. 8 to agree on the link to remove."""

from __future__ import annotations

from collections.abc import Sequence

from scotbed.selforg import evaluate as ev
from scotbed.selforg.costs import Costs, Edge
from scotbed.selforg.heuristics.base import View
from scotbed.selforg.records import EVALUATE, Decision, Knobs


class CostAndInterest:
    def __init__(self, name: str) -> None:
        self.name = name

    def evaluate(self, path: Sequence[str], view: View, costs: Costs, knobs: Knobs) -> Decision:
        i, j = path[0], path[-1]
        inputs: dict[str, object] = {"path": list(path), "c_ij": costs.link(i, j)}
        if len(path) < 3:
            return Decision(EVALUATE, i, self.name, "skip", "already linked", inputs)
        try:
            i_ij = ev.known_interest(view.interest, j)
            phi_i = ev.phi(view.interest, view.own)
            indirect = ev.indirect_cost(path, view.interest, phi_i, costs)
        except ev.MissingInterest as exc:
            return Decision(EVALUATE, i, self.name, "skip", f"no estimate for {exc.args[0]} yet", inputs)
        inputs |= {"I_ij": i_ij, "phi": phi_i, "C_ij": indirect}
        if i_ij <= 0:
            return Decision(EVALUATE, i, self.name, "skip", "no common interest", inputs)
        if costs.link(i, j) < indirect * (1 - knobs.hysteresis):
            return Decision(EVALUATE, i, self.name, "request", "c_ij < C_ij", inputs)
        return Decision(EVALUATE, i, self.name, "skip", "c_ij >= C_ij", inputs)

    def contribute(self, me: str, ring: Sequence[str], view: View, costs: Costs) -> dict[Edge, float]:
        return ev.cycle_costs(me, ring, view.interest, ev.phi(view.interest, view.own), costs)
