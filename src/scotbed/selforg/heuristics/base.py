"""What a topology heuristic decides: whether to request a link, and its part of the agreement.

The agreement sums every cycle broker's contribution per link and removes the least (Eq. 9/10);
each heuristic phrases its removal rule in that form, so the one state machine serves all three.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from scotbed.selforg.costs import Costs, Edge
from scotbed.selforg.records import Decision, Knobs


@dataclass(frozen=True)
class View:
    """One broker's knowledge: its cache size I_i, I_ix per known broker x, interest of path links."""

    own: float
    interest: Mapping[str, float]
    link_interest: Mapping[Edge, float]


class Heuristic(Protocol):
    name: str

    def evaluate(self, path: Sequence[str], view: View, costs: Costs, knobs: Knobs) -> Decision:
        """At path[0] = i, on a broadcast from path[-1] = j: request (outcome "request") or not."""
        ...

    def contribute(self, me: str, ring: Sequence[str], view: View, costs: Costs) -> dict[Edge, float]:
        """``me``'s addition to the request's cost vector over the links of cycle ``ring``."""
        ...
