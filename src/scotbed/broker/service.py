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

Matching cost. With ``match_us_per_entry`` > 0 a notification's service also takes that long for
each entry of the broker's routing table, so that table size matters as it did on the papers'
brokers (whose matching time grew with the subscriptions they held) and in the ``sim`` backend,
where matching itself takes no virtual time (docs/design.md §11). Like ``service_us``, it is an
emulated cost on top of whatever the host's own matching takes.

Off by default (0): the loop runs as before. Link capacity (a slow *link*, at the output queue) is
the other bottleneck a run can emulate; this one is the broker's own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from scotbed.messages import Publication


def units(msg: object) -> int:
    """Service times one message costs: 1, plus one per subscription packed into it."""
    return 1 + len(getattr(msg, "packed", ()))


def service_us(msg: object, per_unit_us: float, match_us_per_entry: float = 0.0, entries: int = 0) -> float:
    """The service one message takes, in µs: ``per_unit_us`` per unit, and for a notification
    ``match_us_per_entry`` per routing-table entry it is matched against (``entries``)."""
    cost = per_unit_us * units(msg)
    if match_us_per_entry > 0 and isinstance(msg, Publication):
        cost += match_us_per_entry * entries
    return cost


class Server:
    """One server with a fixed service time; ``wait_s`` is its pure core, ``serve`` sleeps it."""

    def __init__(
        self, service_us: float, match_us_per_entry: float = 0.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.service_us = max(0.0, service_us)
        self.match_us_per_entry = max(0.0, match_us_per_entry)
        self.service_s = self.service_us / 1e6
        self.clock = clock
        self.free_at = 0.0  # when the message in service is done (the clock's seconds)
        self.backlog = False  # a message was waiting when the last service ended

    @property
    def active(self) -> bool:
        return self.service_s > 0 or self.match_us_per_entry > 0

    def cost_s(self, msg: object, table_size: Callable[[], int] | None = None) -> float:
        """``msg``'s service time, in seconds (:func:`service_us`); ``table_size`` is asked only when the
        matching cost model is on and ``msg`` is a notification."""
        charged = self.match_us_per_entry > 0 and isinstance(msg, Publication)
        entries = table_size() if charged and table_size is not None else 0
        return service_us(msg, self.service_us, self.match_us_per_entry, entries) / 1e6

    def wait_s(self, now: float, cost_s: float | None = None) -> float:
        """How long a message of service time ``cost_s`` (one unit's by default) taken off the queue at
        ``now`` waits for its service to end."""
        start = self.free_at if self.backlog else max(now, self.free_at)
        self.free_at = start + (self.service_s if cost_s is None else cost_s)
        return self.free_at - now

    def ended(self, backlog: bool) -> None:
        """The message's service ended (it was handled); ``backlog``: another one is waiting."""
        self.backlog = backlog

    async def serve(self, cost_s: float | None = None) -> None:
        wait = self.wait_s(self.clock(), cost_s)
        if wait > 0:
            await asyncio.sleep(wait)
