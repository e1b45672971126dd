"""A synchronous driver: every broker sees every broadcast of its η-neighbourhood at once, and
requests run through the agreement to completion before the next broker evaluates.

It is the reference the simulator is checked against and what the exact small cases use: the same
heuristic and agreement code, with no clock and no message in flight.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field

from scotbed.selforg.agreement import ABORT, COMMIT, Lock, Request, contribution, holders, step
from scotbed.selforg.costs import Costs, edge
from scotbed.selforg.heuristics import Heuristic, View
from scotbed.selforg.records import AGREE, NO_KNOBS, SWAP, Decision, Knobs
from scotbed.selforg.tree import Tree


def exact_view(me: str, tree: Tree, caches: Mapping[str, Set[str]], eta: int) -> View:
    """What ``me`` knows after one broadcast round with exact (collision-free) interest."""
    near = [x for x in tree.within(me, eta) if x != me]
    own = caches.get(me, set())
    interest = {x: float(len(own & caches.get(x, set()))) for x in near}
    links = {
        edge(u, v): float(len(caches.get(u, set()) & caches.get(v, set())))
        for u in tree.within(me, eta)
        for v in tree.adjacency[u]
    }
    return View(float(len(own)), interest, links)


@dataclass
class Settled:
    tree: Tree
    records: list[Decision] = field(default_factory=list)

    @property
    def swaps(self) -> list[Decision]:
        return [r for r in self.records if r.kind == SWAP]


def agree(
    request: Request, tree: Tree, views: Mapping[str, View], heuristic: Heuristic, costs: Costs
) -> tuple[str, Decision | None, list[Decision]]:
    """Run one request along its path; returns (outcome, the swap record or None, agree records)."""
    locks = {b: Lock() for b in request.path}
    log = []
    while True:
        me = request.path[request.at]
        part = contribution(heuristic, request, views[me], costs)
        s = step(request, locks[me], tree.adjacency[me], part)
        log.append(
            Decision(AGREE, me, heuristic.name, s.action, s.reason, {"swap": request.swap, "part": part})
        )
        if s.action == ABORT:
            for b in holders(request):
                locks[b].release(request.swap)
            return ABORT, None, log
        if s.action == COMMIT:
            assert s.remove is not None
            inputs = {"add": request.requested, "remove": s.remove, "vector": dict(request.vector)}
            return COMMIT, Decision(SWAP, me, heuristic.name, COMMIT, "", inputs), log


def settle(
    tree: Tree,
    costs: Costs,
    caches: Mapping[str, Set[str]],
    heuristic: Heuristic,
    eta: int,
    knobs: Knobs = NO_KNOBS,
    max_swaps: int = 1000,
) -> Settled:
    """Evaluate broker by broker (sorted), origin by origin (nearest first), until no swap commits."""
    out = Settled(tree)
    while len(out.swaps) < max_swaps:
        swapped = False
        views = {b: exact_view(b, out.tree, caches, eta) for b in out.tree.brokers}
        for i in sorted(out.tree.brokers):
            near = out.tree.within(i, eta)
            for j in sorted(near, key=lambda x: (near[x], x)):
                if near[j] < 2:
                    continue
                path = out.tree.path(i, j)
                d = heuristic.evaluate(path, views[i], costs, knobs)
                out.records.append(d)
                if d.outcome != "request":
                    continue
                request = Request(f"{i}>{j}#{len(out.records)}", tuple(path))
                outcome, swap, log = agree(request, out.tree, views, heuristic, costs)
                out.records.extend(log)
                if outcome == COMMIT and swap is not None:
                    out.records.append(swap)
                    out.tree = out.tree.swapped(swap.inputs["add"], swap.inputs["remove"])
                    swapped = True
                    break
            if swapped:
                break
        if not swapped:
            return out
    return out
