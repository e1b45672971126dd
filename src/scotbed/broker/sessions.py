"""A broker's local client sessions, and whose subscription each ``sub_id`` is.

A :class:`Session` is one subscriber's ``Subscribe`` stream at this broker. :class:`Owners` maps
every ``sub_id`` the broker has seen a subscription for to that subscription's host broker, so
that a subscription or unsubscription of another host under the same id is recognised (and
refused or dropped by the runtime) instead of taking over or removing the owner's routes.
"""

from __future__ import annotations

import asyncio
from collections import deque

from scotbed.messages import Subscription
from scotbed.v1 import scotbed_pb2 as pb

QUEUED_OVERHEAD_BYTES = 512  # what a queued delivery costs beyond its encoding (its objects), accounted
# One stream message carries the deliveries queued when the stream writes, up to this many bytes of
# their encodings (a single larger one goes alone): HTTP/2's default initial flow-control window. gRPC
# takes a whole message into its buffers whatever the reader's window, so a larger bound would let a
# subscriber that never reads hold more of the broker than ``limits.max_session_backlog_bytes``.
BATCH_BYTES = 64 << 10


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
    The stream sends what has queued since its last write as one message (:meth:`next_batch`): a
    gRPC write costs about as much as routing a notification, so a subscriber that receives a burst
    costs its broker one write per burst, not one per notification.
    """

    def __init__(self, sub: Subscription, subscriber: str, peer: str = "", limit: int = 0) -> None:
        self.sub = sub
        self.subscriber = subscriber
        self.peer = peer  # the client connection that opened it: only it may unsubscribe it
        self.limit = limit  # bytes of queued deliveries; 0 = unbounded
        self.queued_bytes = 0
        self._queue: deque[tuple[pb.Delivery, int] | None] = deque()  # None: the end
        self._queued = asyncio.Event()
        self.accepted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed = False

    def offer(self, d: pb.Delivery) -> bool:
        """Queue a delivery unless it would take the backlog past ``limit``."""
        size = d.ByteSize() + QUEUED_OVERHEAD_BYTES
        if self.limit and self.queued_bytes + size > self.limit:
            return False
        self.queued_bytes += size
        self._queue.append((d, size))
        self._queued.set()
        return True

    def end(self) -> None:
        """No more deliveries: the stream ends after those queued."""
        self._queue.append(None)
        self._queued.set()

    async def next_batch(self) -> pb.SubscribeEvent | None:
        """The next stream message: the deliveries queued now, oldest first, up to :data:`BATCH_BYTES`
        (at least one; waits for one), or None at the end (after the deliveries queued before it)."""
        queue = self._queue
        while not queue:
            self._queued.clear()
            await self._queued.wait()
        if queue[0] is None:
            return None
        ev = pb.SubscribeEvent()
        items = ev.deliveries.items
        room = BATCH_BYTES
        while (
            queue
            and (head := queue[0]) is not None
            and (not items or head[1] - QUEUED_OVERHEAD_BYTES <= room)
        ):
            queue.popleft()
            d, size = head
            self.queued_bytes -= size
            room -= size - QUEUED_OVERHEAD_BYTES
            items.append(d)
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
