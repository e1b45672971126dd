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

SESSION_QUEUE_LIMIT = 100_000  # deliveries waiting for a slow subscriber before drops


class SessionRefused(RuntimeError):
    """A local subscription the broker could not take: its Subscribe call is refused with this message;
    ``taken``: its id belongs to another broker's subscription (else routing failed on it)."""

    def __init__(self, text: str, taken: bool = False) -> None:
        super().__init__(text)
        self.taken = taken


class Session:
    """A local subscriber's Subscribe stream: its deliveries queue and the ack it waits for."""

    def __init__(self, sub: Subscription, subscriber: str, peer: str = "") -> None:
        self.sub = sub
        self.subscriber = subscriber
        self.peer = peer  # the client connection that opened it: only it may unsubscribe it
        self.queue: asyncio.Queue[pb.SubscribeEvent | None] = asyncio.Queue(SESSION_QUEUE_LIMIT)
        self.accepted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed = False


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
