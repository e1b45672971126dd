"""gRPC adapters: the Broker (client), Link and Admin services, health and reflection.

Client sessions: a ``Subscribe`` stream first carries one ack — sent after the
processing loop has handed the subscription to the routing plug-in — then
the deliveries. When the stream ends for any reason (client cancel, network,
``Unsubscribe``) the subscription is removed as an unsubscription, unless the
broker itself is stopping. A subscription belongs to the client connection
that opened it: ``Unsubscribe`` from any other finds nothing; and a ``sub_id``
another broker's subscription holds is refused (``ALREADY_EXISTS``), and
dropped when it comes over a link (:class:`~scotbed.broker.sessions.Owners`).
Malformed requests are refused with
``INVALID_ARGUMENT`` and a message that says what was wrong, and counted
(``rejected``); a request over a size limit (:mod:`scotbed.broker.limits`) is
refused with ``RESOURCE_EXHAUSTED`` before it is acknowledged (and counted);
bytes that do not decode are refused by :mod:`scotbed.broker.guard` (counted).
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2
from grpc_reflection.v1alpha import reflection, reflection_pb2

from scotbed.broker import guard, runtoken, tls
from scotbed.broker.limits import Refusal, check_publish, check_subscribe, server_options
from scotbed.broker.links import LinkReceiver
from scotbed.broker.runtime import Broker
from scotbed.broker.sessions import SessionRefused
from scotbed.broker.treeswap import new_links
from scotbed.config import link_delay_problem
from scotbed.filters import FilterError
from scotbed.messages import Subscription
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg
from scotbed.wire import filter_from_pb, publication_from_notification

CLIENT_PUB = "client_pub"  # counter: publications from this broker's own clients


class BrokerService(pbg.BrokerServicer):
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    async def _reject(self, context: Any, text: str) -> None:
        self.broker.counters["rejected"] += 1
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, text)

    async def _refuse(self, context: Any, refusal: Refusal | None) -> None:
        if refusal is not None:
            self.broker.counters["rejected"] += 1
            await context.abort(refusal.code, refusal.text)

    async def Subscribe(self, request: pb.SubscribeRequest, context: Any) -> AsyncIterator[pb.SubscribeEvent]:
        broker = self.broker
        if not request.sub_id:
            await self._reject(context, "sub_id is empty")
        await self._refuse(context, check_subscribe(request, broker.cfg.limits))
        try:
            flt = filter_from_pb(request.filter)
        except FilterError as e:
            await self._reject(context, f"subscription {request.sub_id!r}: {e}")
            return
        if request.sub_id in broker.sessions:
            broker.counters["rejected"] += 1
            await context.abort(
                grpc.StatusCode.ALREADY_EXISTS, f"subscription {request.sub_id!r} is already active here"
            )
        if (owner := broker.owners.elsewhere(request.sub_id, broker.id)) is not None:
            broker.counters["rejected"] += 1
            await context.abort(
                grpc.StatusCode.ALREADY_EXISTS,
                f"subscription {request.sub_id!r} is already active at broker {owner}",
            )
        if broker.stopping:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"broker {broker.id} is stopping")
        sub = Subscription(request.sub_id, flt, broker.id, origin_ns=time.time_ns())
        session = broker.open_session(sub, request.subscriber, context.peer())
        try:
            try:
                await session.accepted
            except SessionRefused as e:
                code = grpc.StatusCode.ALREADY_EXISTS if e.taken else grpc.StatusCode.INTERNAL
                await context.abort(code, str(e))
            yield pb.SubscribeEvent(
                ack=pb.SubscribeAck(sub_id=sub.sub_id, broker=broker.id, ts_ns=time.time_ns())
            )
            while (ev := await session.next_batch()) is not None:
                yield ev
        finally:
            broker.close_session(sub.sub_id)

    async def Unsubscribe(self, request: pb.UnsubscribeRequest, context: Any) -> pb.UnsubscribeReply:
        """Only the connection that opened the subscription may end it; to any other it is not found."""
        return pb.UnsubscribeReply(found=self.broker.close_session(request.sub_id, context.peer()))

    async def Publish(self, request: pb.PublishRequest, context: Any) -> pb.PublishReply:
        broker = self.broker
        if broker.stopping:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"broker {broker.id} is stopping")
        await self._refuse(context, check_publish(request, broker.cfg.limits))
        pubs = []
        for k, n in enumerate(request.notifications):
            if not n.pub_id:
                await self._reject(context, f"notifications[{k}]: pub_id is empty")
            try:
                pubs.append((publication_from_notification(n, broker.id), n))
            except FilterError as e:
                await self._reject(context, f"notifications[{k}] ({n.pub_id!r}): {e}")
        for pub, n in pubs:
            broker.counters[CLIENT_PUB] += 1
            broker.submit(None, pub, n)
        return pb.PublishReply(accepted=len(pubs))


async def admit(broker: Broker, context: Any, call: str) -> None:
    """Refuse (``PERMISSION_DENIED``, counted ``refused``) a call without the run's token
    (:mod:`scotbed.broker.runtoken`)."""
    if not runtoken.admitted(broker.cfg.run_token, context):
        broker.counters["refused"] += 1
        await context.abort(
            grpc.StatusCode.PERMISSION_DENIED,
            f"{call} on broker {broker.id}: the run token ({runtoken.KEY} metadata) is missing or wrong",
        )


class LinkService(pbg.LinkServicer):
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.receiver = LinkReceiver(broker)

    async def Connect(
        self, request_iterator: AsyncIterator[pb.Batch], context: Any
    ) -> AsyncIterator[pb.BatchAck]:
        await admit(self.broker, context, "Link.Connect")
        async for ack in self.receiver.connect(request_iterator, context):
            yield ack


class AdminService(pbg.AdminServicer):
    """Every method but ``Status`` requires the run token (:func:`admit`)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    async def Status(self, request: pb.StatusRequest, context: Any) -> pb.StatusReply:
        return self.broker.status()

    async def RoutingTable(self, request: pb.TableRequest, context: Any) -> pb.TableReply:
        await admit(self.broker, context, "Admin.RoutingTable")
        return self.broker.table()

    async def Flush(self, request: pb.FlushRequest, context: Any) -> pb.FlushReply:
        await admit(self.broker, context, "Admin.Flush")
        return pb.FlushReply(events_written=self.broker.events.flush())

    async def _refuse(self, context: Any, code: grpc.StatusCode, text: str) -> None:
        self.broker.counters["rejected"] += 1
        await context.abort(code, text)

    async def Drain(self, request: pb.DrainRequest, context: Any) -> pb.DrainReply:
        await admit(self.broker, context, "Admin.Drain")
        if not (math.isfinite(request.timeout_s) and request.timeout_s >= 0):
            await self._refuse(
                context,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"timeout_s must be finite, >= 0: {request.timeout_s}",
            )
        ok = await self.broker.wait_quiescent(request.timeout_s or 10.0)
        self.broker.events.flush()
        return pb.DrainReply(quiescent=ok)

    async def SetLinkCapacity(self, request: pb.LinkCapacityRequest, context: Any) -> pb.LinkCapacityReply:
        await admit(self.broker, context, "Admin.SetLinkCapacity")
        capacity = request.capacity_msgs_per_s
        if not (math.isfinite(capacity) and capacity >= 0):
            await self._refuse(
                context,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"capacity_msgs_per_s must be finite, >= 0: {capacity}",
            )
        try:
            self.broker.set_capacity(request.neighbour, capacity)
        except KeyError:
            await self._refuse(
                context,
                grpc.StatusCode.NOT_FOUND,
                f"{request.neighbour!r} is not a neighbour of {self.broker.id}",
            )
        return pb.LinkCapacityReply()

    async def Relink(self, request: pb.RelinkRequest, context: Any) -> pb.RelinkReply:
        await admit(self.broker, context, "Admin.Relink")
        up, down, next_hop = new_links(request.up), list(request.down), dict(request.next_hop)
        try:
            return pb.RelinkReply(repointed=self.broker.swap.relink(up, down, next_hop, request.version))
        except ValueError as e:
            await self._refuse(context, grpc.StatusCode.FAILED_PRECONDITION, str(e))
        except KeyError as e:
            await self._refuse(context, grpc.StatusCode.INVALID_ARGUMENT, str(e.args[0]))
        raise AssertionError("unreachable: abort raises")

    async def SetLinkLatency(self, request: pb.LinkLatencyRequest, context: Any) -> pb.LinkLatencyReply:
        await admit(self.broker, context, "Admin.SetLinkLatency")
        latency, jitter = request.latency_ms, request.jitter_ms
        if (why := link_delay_problem(latency, jitter)) is not None:
            await self._refuse(context, grpc.StatusCode.INVALID_ARGUMENT, why)
        try:
            self.broker.set_latency(request.neighbour, latency, jitter)
        except KeyError:
            await self._refuse(
                context,
                grpc.StatusCode.NOT_FOUND,
                f"{request.neighbour!r} is not a neighbour of {self.broker.id}",
            )
        return pb.LinkLatencyReply()


SERVICE_NAMES = (
    pb.DESCRIPTOR.services_by_name["Broker"].full_name,
    pb.DESCRIPTOR.services_by_name["Link"].full_name,
    pb.DESCRIPTOR.services_by_name["Admin"].full_name,
)


def build_server(broker: Broker) -> tuple[grpc.aio.Server, health.aio.HealthServicer, int]:
    """A started-later server with every service; returns it, its health servicer and the bound port.

    gRPC's own receive limit is twice ``max_message_bytes`` so that a client request between the two is
    refused by the handler — counted and with a message naming the limit; beyond that gRPC refuses it.
    """
    server = grpc.aio.server(options=server_options(2 * broker.cfg.limits.max_message_bytes))
    health_servicer = health.aio.HealthServicer()
    reflector = reflection.aio.ReflectionServicer(
        (*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME)
    )

    def malformed() -> None:
        broker.counters["rejected"] += 1

    for servicer, service in (
        (BrokerService(broker), pb.DESCRIPTOR.services_by_name["Broker"]),
        (LinkService(broker), pb.DESCRIPTOR.services_by_name["Link"]),
        (AdminService(broker), pb.DESCRIPTOR.services_by_name["Admin"]),
        (health_servicer, health_pb2.DESCRIPTOR.services_by_name["Health"]),
        (reflector, reflection_pb2.DESCRIPTOR.services_by_name["ServerReflection"]),
    ):
        guard.add_service(server, servicer, service, malformed)
    port = tls.add_port(server, broker.cfg.listen, broker.id)
    if port == 0:
        raise OSError(f"{broker.cfg.listen}: cannot bind (address in use or not available)")
    return server, health_servicer, port


SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
