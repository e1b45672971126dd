"""The consensus phase (paper §4.2, Eq. 8–10) as a per-broker state machine with locks and aborts.

Broker i requests the link e_n = (i, j) along the tree path i … j it learnt from j's broadcast.
Each broker on the path, in turn, takes its lock (one swap at a time per broker), checks that the
next hop is still its neighbour (the tree may have changed since the broadcast), adds its
contribution to the cost vector and passes the request on. At j the least-cost link e_r is
chosen (Eq. 10): e_r = e_n aborts, anything else commits the swap. An abort releases the locks of
the brokers the request has passed; a commit holds them until the swap is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scotbed.selforg.costs import Costs, Edge, edge
from scotbed.selforg.evaluate import MissingInterest, least
from scotbed.selforg.heuristics import Heuristic, View

FORWARD = "forward"
ABORT = "abort"
COMMIT = "commit"


@dataclass
class Request:
    """A link request in flight: ``path`` = i … j, ``at`` = the index of the broker holding it."""

    swap: str
    path: tuple[str, ...]
    at: int = 0
    vector: dict[Edge, float] = field(default_factory=dict)

    @property
    def requested(self) -> Edge:
        return edge(self.path[0], self.path[-1])

    @property
    def ring(self) -> tuple[str, ...]:
        """The reconfiguration cycle R in cycle order (the path, closed by e_n)."""
        return self.path


@dataclass
class Lock:
    """A broker's lock: the swap it takes part in, or None."""

    holder: str | None = None

    def acquire(self, swap: str) -> bool:
        if self.holder not in (None, swap):
            return False
        self.holder = swap
        return True

    def release(self, swap: str) -> None:
        if self.holder == swap:
            self.holder = None


@dataclass(frozen=True)
class Step:
    """What the broker holding the request does next: forward to ``to``, abort, or commit ``remove``."""

    action: str
    reason: str
    to: str | None = None
    remove: Edge | None = None


def contribution(
    heuristic: Heuristic, request: Request, view: View, costs: Costs
) -> Mapping[Edge, float] | str:
    """The holder's part of the cost vector, or why it cannot give one (an estimate is missing)."""
    me = request.path[request.at]
    try:
        return heuristic.contribute(me, request.ring, view, costs)
    except MissingInterest as exc:
        return f"{me} has no estimate for {exc.args[0]} yet"


def step(
    request: Request, lock: Lock, neighbours: frozenset[str], contribution: Mapping[Edge, float] | str
) -> Step:
    """One broker's part; mutates ``request`` (vector, position) and ``lock``."""
    me = request.path[request.at]
    if isinstance(contribution, str):
        return Step(ABORT, contribution)
    if not lock.acquire(request.swap):
        return Step(ABORT, f"{me} is locked by {lock.holder}")
    last = request.at == len(request.path) - 1
    if not last and request.path[request.at + 1] not in neighbours:
        return Step(ABORT, f"{request.path[request.at + 1]} is no longer a neighbour of {me}")
    for e, v in contribution.items():
        request.vector[e] = request.vector.get(e, 0.0) + v
    if not last:
        request.at += 1
        return Step(FORWARD, "", to=request.path[request.at])
    e_r = least(request.vector, request.requested)
    if e_r == request.requested:
        return Step(ABORT, "the requested link is the least-cost one to remove")
    return Step(COMMIT, "", remove=e_r)


def holders(request: Request) -> tuple[str, ...]:
    """The brokers whose locks the request holds (to release on abort or after the swap)."""
    return request.path[: request.at + 1]
