"""A broker's local client sessions, and whose subscription each ``sub_id`` is.

A :class:`Session` is one subscriber's ``Subscribe`` stream at this broker. :class:`Owners` maps
every ``sub_id`` the broker has seen a subscription for to that subscription's host broker, so
that a subscription or unsubscription of another host under the same id is recognised (and
refused or dropped by the runtime) instead of taking over or removing the owner's routes.
"""

from __future__ import annotations

import asyncio

from scotbed.messages import Subscription
from scotbed.v1 import scotbed_pb2 as pb

QUEUED_OVERHEAD_BYTES = 512  # what a queued delivery costs beyond its encoding (its objects), accounted


class SessionRefused(RuntimeError):
    """A local subscription the broker could not take: its Subscribe call is refused with this message;
    ``taken``: its id belongs to another broker's subscription (else routing failed on it)."""

    def __init__(self, text: str, taken: bool = False) -> None:
        super().__init__(text)
        self.taken = taken


class Session:
    """A local subscriber's Subscribe stream: its deliveries queue and the ack it waits for.

    The queue is bounded in bytes (``limit``: ``limits.max_session_backlog_bytes``): a subscriber that
    reads slower than it is delivered to, or never, holds at most that much of the broker's memory;
    a delivery that would pass it is refused (:meth:`offer`) and the runtime drops it, counted.
    """

    def __init__(self, sub: Subscription, subscriber: str, peer: str = "", limit: int = 0) -> None:
        self.sub = sub
        self.subscriber = subscriber
        self.peer = peer  # the client connection that opened it: only it may unsubscribe it
        self.limit = limit  # bytes of queued deliveries; 0 = unbounded
        self.queued_bytes = 0
        self._queue: asyncio.Queue[tuple[pb.SubscribeEvent, int] | None] = asyncio.Queue()
        self.accepted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed = False

    def offer(self, ev: pb.SubscribeEvent) -> bool:
        """Queue a delivery unless it would take the backlog past ``limit``."""
        size = ev.ByteSize() + QUEUED_OVERHEAD_BYTES
        if self.limit and self.queued_bytes + size > self.limit:
            return False
        self.queued_bytes += size
        self._queue.put_nowait((ev, size))
        return True

    def end(self) -> None:
        """No more deliveries: the stream ends after those queued."""
        self._queue.put_nowait(None)

    async def next(self) -> pb.SubscribeEvent | None:
        """The next delivery to send, or None at the end."""
        item = await self._queue.get()
        if item is None:
            return None
        ev, size = item
        self.queued_bytes -= size
        return ev


class Owners:
    """``sub_id`` -> the host broker of the subscription known here under that id."""

    def __init__(self) -> None:
        self._host: dict[str, str] = {}

    def elsewhere(self, sub_id: str, host: str) -> str | None:
        """The owner's host broker when the id belongs to a subscription of another host than ``host``."""
        owner = self._host.get(sub_id)
        return owner if owner is not None and owner != host else None

    def take(self, sub_id: str, host: str) -> None:
        self._host[sub_id] = host

    def release(self, sub_id: str) -> None:
        self._host.pop(sub_id, None)
