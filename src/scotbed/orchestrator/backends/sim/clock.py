"""The sim backend's event loop: one virtual clock and a heap of timed callbacks.

A ``heapq`` loop, not simpy: every actor of the time model (a broker's server, a link's sender, a
client) is a callback scheduled at an instant, and none waits on a condition other than time, which
is all a heap of ``(instant, sequence)`` gives, in order and deterministically (ties run in the order
they were scheduled). ``benchmarks/sim_scale.py`` prints what it costs per message.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

#: virtual ``ts_ns`` count from 2026-01-01T00:00:00Z: a plausible wall clock that no host supplies
EPOCH_NS = 1_767_225_600 * 1_000_000_000


class Clock:
    """Virtual nanoseconds since :data:`EPOCH_NS` and the callbacks still due."""

    def __init__(self, start_ns: int = EPOCH_NS) -> None:
        self.now_ns = start_ns
        self._heap: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = 0
        self.handled = 0  # callbacks run so far
        #: called with an instant before the clock moves on to it (the periodic samples catch up there)
        self.on_advance: Callable[[int], None] | None = None

    def seconds(self) -> float:
        """Monotonic seconds, as a broker's ``time.monotonic`` (``BrokerView.clock``)."""
        return (self.now_ns - EPOCH_NS) / 1e9

    def at(self, t_ns: int, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` at ``t_ns`` (never before now)."""
        heapq.heappush(self._heap, (max(t_ns, self.now_ns), self._seq, fn, args))
        self._seq += 1

    def after(self, dt_ns: int, fn: Callable[..., None], *args: Any) -> None:
        self.at(self.now_ns + dt_ns, fn, *args)

    @property
    def idle(self) -> bool:
        return not self._heap

    def run(self, until_ns: int | None = None) -> None:
        """Run every callback due up to ``until_ns`` (all of them, including those they schedule, when
        None); the clock then stands at the last one run, or at ``until_ns``."""
        heap, pop, advance = self._heap, heapq.heappop, self.on_advance
        last = until_ns if until_ns is not None else float("inf")
        n = 0
        while heap and heap[0][0] <= last:
            t, _, fn, args = pop(heap)
            if t != self.now_ns:
                if advance is not None:
                    advance(t)
                self.now_ns = t
            fn(*args)
            n += 1
        self.handled += n
        if until_ns is not None and until_ns > self.now_ns:
            if self.on_advance is not None:
                self.on_advance(until_ns)
            self.now_ns = until_ns
