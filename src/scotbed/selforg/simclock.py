"""The simulator's substrate: a virtual clock and FIFO links whose latency follows the link cost.

A message sent on u→v arrives after the link's latency but never before the message sent on u→v
just before it (FIFO per direction, like a TCP stream); equal arrival times keep send order.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from scotbed.selforg.costs import Costs


class Clock:
    """Events in time order; ties in scheduling order."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = 0

    def at(self, when: float, fn: Callable[..., None], *args: Any) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (max(when, self.now), self._seq, fn, args))

    def run(self, until: float | None = None) -> None:
        """Run events up to ``until`` (all of them when None)."""
        while self._heap and (until is None or self._heap[0][0] <= until):
            when, _, fn, args = heapq.heappop(self._heap)
            self.now = when
            fn(*args)
        if until is not None:
            self.now = max(self.now, until)


class Links:
    """Latency = max(floor, scale · c_uv) at send time; the per-direction FIFO clamp on top."""

    def __init__(self, clock: Clock, costs: Callable[[], Costs], scale: float, floor: float) -> None:
        self.clock, self.costs, self.scale, self.floor = clock, costs, scale, floor
        self._last: dict[tuple[str, str], float] = defaultdict(float)

    def send(self, u: str, v: str, fn: Callable[..., None], *args: Any) -> None:
        arrive = self.clock.now + max(self.floor, self.scale * self.costs().link(u, v))
        arrive = max(arrive, self._last[(u, v)])
        self._last[(u, v)] = arrive
        self.clock.at(arrive, fn, *args)
