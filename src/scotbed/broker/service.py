"""A broker's per-message service time: the processing cost of a slow broker, emulated.

Why. The selective-pruning paper's burst congests the core brokers because they are slow to
*process* the subscriptions an unsubscription releases; a Python broker on loopback processes one
in tens of µs, so without a cost the burst never queues at a broker's input. With ``service_us``
> 0 the broker is one server with a deterministic service time: the processing loop takes a
message off the input queue and holds it for ``service_us`` before the routing plug-in sees it
(FIFO, so at most one message per ``service_us``). A virtual clock keeps the rate exact when the
event loop wakes late: a message that was already waiting when the previous service ended starts
its service then, not when the loop got round to it, so a late wake-up shortens the next wait
instead of adding up.

A message that packs subscriptions (covering-packing) costs one service time per subscription it
carries, plus its own: packing sends fewer messages, but "each subscription or unsubscription still
needs to be processed individually by the recipient brokers" (selective-filter-aggregation §V-A).

Off by default (0): the loop runs as before. Link capacity (a slow *link*, at the output queue) is
the other bottleneck a run can emulate; this one is the broker's own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


def units(msg: object) -> int:
    """Service times one message costs: 1, plus one per subscription packed into it."""
    return 1 + len(getattr(msg, "packed", ()))


class Server:
    """One server with a fixed service time; ``wait_s`` is its pure core, ``serve`` sleeps it."""

    def __init__(self, service_us: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.service_s = max(0.0, service_us) / 1e6
        self.clock = clock
        self.free_at = 0.0  # when the message in service is done (the clock's seconds)
        self.backlog = False  # a message was waiting when the last service ended

    @property
    def active(self) -> bool:
        return self.service_s > 0

    def wait_s(self, now: float, n: int = 1) -> float:
        """How long a message of ``n`` units taken off the queue at ``now`` waits for its service to end."""
        start = self.free_at if self.backlog else max(now, self.free_at)
        self.free_at = start + n * self.service_s
        return self.free_at - now

    def ended(self, backlog: bool) -> None:
        """The message's service ended (it was handled); ``backlog``: another one is waiting."""
        self.backlog = backlog

    async def serve(self, n: int = 1) -> None:
        wait = self.wait_s(self.clock(), n)
        if wait > 0:
            await asyncio.sleep(wait)
