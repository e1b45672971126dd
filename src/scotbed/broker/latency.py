"""Link latency emulation: a delay line between a link's batcher and the wire.

Model. A batch leaves the output queue (after the token bucket: transmission)
and then takes ``latency_ms`` ± ``jitter_ms`` to reach the neighbour
(propagation): the sender writes it to the stream only at its due time. The
delay is drawn uniformly from [latency − jitter, latency + jitter] (never
below 0), but a batch is never due before the one ahead of it — a link is
one ordered stream, so jitter stretches gaps and never reorders. Acks come
back undelayed; batches waiting in the line do not count against the
in-flight window, so a long link does not throttle throughput. They are still
unacknowledged, so the broker is not quiescent while the line holds any.

A new delay (``Admin.SetLinkLatency``) applies to the batches put from then on, and
shortens the wait of those already in the line: each becomes due at the earlier
of its old due time and its put time plus a delay drawn anew, still in order. So
lowering a latency releases what a longer one held, each batch once, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any


class DelayLine:
    def __init__(self, latency_ms: float, jitter_ms: float, rng: random.Random | None = None) -> None:
        self.rng = rng or random.Random()
        self.pending: deque[tuple[float, float, Any]] = deque()  # (due, put at, item), due in order
        self.wake = asyncio.Event()
        self._last_due = 0.0
        self.set(latency_ms, jitter_ms)

    def set(self, latency_ms: float, jitter_ms: float) -> None:
        """New delays for batches put from now on; those waiting become due no later than the new
        delay after their put (a shorter delay releases them, in order)."""
        self.ms = (latency_ms, jitter_ms)  # as set: what the sender compares with the link's setting
        self.latency_s = max(0.0, latency_ms) / 1000.0
        self.jitter_s = max(0.0, jitter_ms) / 1000.0
        if self.pending:
            self._redue()
            self.wake.set()

    def _redue(self) -> None:
        last = 0.0
        redone: deque[tuple[float, float, Any]] = deque()
        for due, put_at, item in self.pending:
            last = max(last, min(due, put_at + self._delay()))
            redone.append((last, put_at, item))
        self.pending = redone
        self._last_due = last

    @property
    def active(self) -> bool:
        return self.latency_s > 0 or self.jitter_s > 0

    @property
    def in_use(self) -> bool:
        """Batches must go through the line: it delays, or still holds batches (a write must not overtake)."""
        return self.active or bool(self.pending)

    def _delay(self) -> float:
        return max(0.0, self.latency_s + self.rng.uniform(-self.jitter_s, self.jitter_s))

    def due(self, now: float) -> float:
        """When a batch that leaves the queue at ``now`` (monotonic seconds) reaches the wire."""
        self._last_due = max(now + self._delay(), self._last_due)
        return self._last_due

    def put(self, item: Any) -> None:
        now = time.monotonic()
        self.pending.append((self.due(now), now, item))
        self.wake.set()

    async def drain_to(self, write: Callable[[Any], Awaitable[None]]) -> None:
        """Write each item at its due time, in order, until cancelled; a new delay wakes it."""
        while True:
            while not self.pending:
                self.wake.clear()
                await self.wake.wait()
            due, _, item = self.pending[0]
            wait = due - time.monotonic()
            if wait > 0:
                self.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), wait)
                continue
            self.pending.popleft()
            await write(item)
