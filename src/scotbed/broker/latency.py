"""Link latency emulation: a delay line between a link's batcher and the wire.

Model. A batch leaves the output queue (after the token bucket: transmission)
and then takes ``latency_ms`` ± ``jitter_ms`` to reach the neighbour
(propagation): the sender writes it to the stream only at its due time. The
delay is drawn uniformly from [latency − jitter, latency + jitter] (never
below 0), but a batch is never due before the one ahead of it — a link is
one ordered stream, so jitter stretches gaps and never reorders. Acks come
back undelayed; batches waiting in the line do not count against the
in-flight window, so a long link does not throttle throughput.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any


class DelayLine:
    def __init__(self, latency_ms: float, jitter_ms: float, rng: random.Random | None = None) -> None:
        self.set(latency_ms, jitter_ms)
        self.rng = rng or random.Random()
        self.pending: deque[tuple[float, Any]] = deque()
        self.wake = asyncio.Event()
        self._last_due = 0.0

    def set(self, latency_ms: float, jitter_ms: float) -> None:
        """New delays for batches put from now on (``Admin.SetLinkLatency``); those waiting keep theirs."""
        self.ms = (latency_ms, jitter_ms)  # as set: what the sender compares with the link's setting
        self.latency_s = max(0.0, latency_ms) / 1000.0
        self.jitter_s = max(0.0, jitter_ms) / 1000.0

    @property
    def active(self) -> bool:
        return self.latency_s > 0 or self.jitter_s > 0

    @property
    def in_use(self) -> bool:
        """Batches must go through the line: it delays, or still holds batches (a write must not overtake)."""
        return self.active or bool(self.pending)

    def due(self, now: float) -> float:
        """When a batch that leaves the queue at ``now`` (monotonic seconds) reaches the wire."""
        d = self.latency_s + self.rng.uniform(-self.jitter_s, self.jitter_s)
        self._last_due = max(now + max(0.0, d), self._last_due)
        return self._last_due

    def put(self, item: Any) -> None:
        self.pending.append((self.due(time.monotonic()), item))
        self.wake.set()

    async def drain_to(self, write: Callable[[Any], Awaitable[None]]) -> None:
        """Write each item at its due time, in order, until cancelled."""
        while True:
            while not self.pending:
                self.wake.clear()
                await self.wake.wait()
            due, item = self.pending[0]
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self.pending.popleft()
            await write(item)
