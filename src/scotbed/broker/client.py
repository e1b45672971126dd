"""A small asyncio client of one broker: subscribe streams, publish, and the Admin service.

Used by tests, the orchestrator and benchmarks (the Locust client is separate)::

    async with BrokerClient("127.0.0.1:50051") as c:
        sub = await c.subscribe("s1", 'symbol = "IBM" and price < 120')
        await c.publish([("p1", {"symbol": "IBM", "price": 100})])
        delivery = await sub.next(timeout=5)
        await sub.close()              # the broker removes the subscription

A :class:`SubscriptionStream` reads its deliveries in the background into
``received`` (and a queue for :meth:`SubscriptionStream.next`) from the
moment the broker acknowledged the subscription.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from typing import Any

import grpc

from scotbed.broker import runtoken, tls
from scotbed.filters import Filter, Scalar
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg
from scotbed.wire import filter_to_pb, notification_to_pb

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
ADMIN_TIMEOUT_S = 10.0  # an Admin call that changes a broker: a frozen broker fails it, named, in this time


class SubscriptionStream:
    def __init__(self, sub_id: str, call: Any) -> None:
        self.sub_id = sub_id
        self.broker = ""
        self.acked_ns = 0
        self._call = call
        self.received: list[pb.Delivery] = []
        self.received_ns: list[int] = []
        self._queue: asyncio.Queue[pb.Delivery] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self.error: grpc.aio.AioRpcError | None = None
        self.ended = asyncio.Event()

    async def _start(self, timeout_s: float) -> None:
        first = await asyncio.wait_for(self._call.read(), timeout_s)
        if first is grpc.aio.EOF or first.WhichOneof("event") != "ack":
            raise RuntimeError(f"subscription {self.sub_id}: the stream did not start with an ack")
        self.broker = first.ack.broker
        self.acked_ns = first.ack.ts_ns
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            while (ev := await self._call.read()) is not grpc.aio.EOF:
                now = time.time_ns()
                for d in ev.deliveries.items:
                    self.received.append(d)
                    self.received_ns.append(now)
                    self._queue.put_nowait(d)
        except asyncio.CancelledError:
            pass
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                self.error = e
        finally:
            self.ended.set()

    async def next(self, timeout: float = 5.0) -> pb.Delivery:
        return await asyncio.wait_for(self._queue.get(), timeout)

    def pub_ids(self) -> list[str]:
        return [d.notification.pub_id for d in self.received]

    async def close(self) -> None:
        """Cancel the stream; the broker treats that as an unsubscription."""
        self._call.cancel()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)


class BrokerClient:
    def __init__(
        self, address: str, max_message_bytes: int = MAX_MESSAGE_BYTES, run_token: str | None = None
    ) -> None:
        """``run_token``: what Admin calls show (:mod:`scotbed.broker.runtoken`); None: this process's."""
        self.address = address
        self._token = runtoken.metadata(run_token)
        self.channel = tls.aio_channel(
            address,
            options=[
                ("grpc.max_send_message_length", max_message_bytes),
                ("grpc.max_receive_message_length", max_message_bytes),
            ],
        )
        self.broker = pbg.BrokerStub(self.channel)
        self.admin = pbg.AdminStub(self.channel)

    async def __aenter__(self) -> BrokerClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.channel.close()

    # --- client API -----------------------------------------------------------------------

    async def subscribe(
        self, sub_id: str, flt: Filter | str, subscriber: str = "", timeout_s: float = 10.0
    ) -> SubscriptionStream:
        """Open a Subscribe stream and wait for the broker's ack."""
        f = Filter.parse(flt) if isinstance(flt, str) else flt
        req = pb.SubscribeRequest(sub_id=sub_id, subscriber=subscriber, filter=filter_to_pb(f))
        stream = SubscriptionStream(sub_id, self.broker.Subscribe(req))
        await stream._start(timeout_s)
        return stream

    async def unsubscribe(self, sub_id: str, subscriber: str = "") -> bool:
        reply = await self.broker.Unsubscribe(pb.UnsubscribeRequest(sub_id=sub_id, subscriber=subscriber))
        return bool(reply.found)

    async def publish(
        self,
        notifications: Iterable[tuple[str, Mapping[str, Scalar]]],
        publisher: str = "",
        intended_ns: int = 0,
    ) -> int:
        """Publish (pub_id, attrs) pairs in one request; returns how many the broker accepted."""
        now = time.time_ns()
        req = pb.PublishRequest(
            notifications=[
                notification_to_pb(pid, publisher, attrs, intended_ns or now, now)
                for pid, attrs in notifications
            ]
        )
        reply = await self.broker.Publish(req)
        return int(reply.accepted)

    # --- admin ----------------------------------------------------------------------------

    async def status(self, timeout_s: float = 5.0) -> pb.StatusReply:
        reply: pb.StatusReply = await self.admin.Status(
            pb.StatusRequest(), timeout=timeout_s, metadata=self._token
        )
        return reply

    async def table(self, timeout_s: float = 5.0) -> pb.TableReply:
        reply: pb.TableReply = await self.admin.RoutingTable(
            pb.TableRequest(), timeout=timeout_s, metadata=self._token
        )
        return reply

    async def flush(self, timeout_s: float = 5.0) -> int:
        reply = await self.admin.Flush(pb.FlushRequest(), timeout=timeout_s, metadata=self._token)
        return int(reply.events_written)

    async def drain(self, timeout_s: float = 10.0) -> bool:
        reply = await self.admin.Drain(
            pb.DrainRequest(timeout_s=timeout_s), timeout=timeout_s + 5, metadata=self._token
        )
        return bool(reply.quiescent)

    async def relink(
        self,
        up: list[pb.NewLink],
        down: list[str],
        next_hop: dict[str, str] | None = None,
        version: int = 0,
        timeout_s: float = ADMIN_TIMEOUT_S,
    ) -> int:
        """Open ``up``, close ``down``, re-point entries by host broker (now, or as tree ``version``)."""
        req = pb.RelinkRequest(up=up, down=down, next_hop=next_hop or {}, version=version)
        reply = await self.admin.Relink(req, timeout=timeout_s, metadata=self._token)
        return int(reply.repointed)

    async def set_link_latency(
        self,
        latency_ms: float,
        jitter_ms: float = 0.0,
        neighbour: str = "",
        timeout_s: float = ADMIN_TIMEOUT_S,
    ) -> None:
        await self.admin.SetLinkLatency(
            pb.LinkLatencyRequest(neighbour=neighbour, latency_ms=latency_ms, jitter_ms=jitter_ms),
            timeout=timeout_s,
            metadata=self._token,
        )

    async def set_link_capacity(
        self, capacity_msgs_per_s: float, neighbour: str = "", timeout_s: float = ADMIN_TIMEOUT_S
    ) -> None:
        await self.admin.SetLinkCapacity(
            pb.LinkCapacityRequest(neighbour=neighbour, capacity_msgs_per_s=capacity_msgs_per_s),
            timeout=timeout_s,
            metadata=self._token,
        )
