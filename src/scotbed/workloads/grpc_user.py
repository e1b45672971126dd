"""A gRPC client of the scotbed Broker API that reports every call through Locust's request events.

In the style of Locust's contrib users (``PostgresUser``, ``MongoDBUser``): a
plain client class that fires ``environment.events.request`` per call, and an
abstract :class:`GrpcUser` whose clients, one per broker address, its process
shares (:class:`ClientPool`). It uses the synchronous gRPC API, which cooperates
with gevent once :func:`init_gevent` has run (the locustfile does it before
anything creates a channel). Request types: ``grpc`` for unary calls
and the subscription handshake (response time = until the broker's ack),
``deliver`` for notifications received (response time = receive time minus
the publication's *intended* time, so Locust's own percentiles show the
end-to-end delay without coordinated omission).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import gevent
import grpc
from grpc import _common as grpc_common
from grpc.experimental import gevent as grpc_gevent
from grpc_health.v1 import health_pb2, health_pb2_grpc
from locust import User
from locust.env import Environment

from scotbed.broker import tls
from scotbed.filters import Filter
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg
from scotbed.wire import filter_to_pb

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
# How soon a channel dials a broker again after its connection failed: gRPC's default backoff (1 s,
# growing to 120 s, shared by every channel of the process to that broker) would keep a client away
# for seconds after a broker the fault timeline restarted serves again. Not
# ``grpc.min_reconnect_backoff_ms``: gRPC takes it as the shortest time a connection attempt may take
# (20 s by default), and at 100 ms a loaded host's handshakes time out ("timed out before receiving
# SETTINGS frame").
RECONNECT_BACKOFF_MS = (100, 250)  # first and longest


# How long a blocked gRPC call waits on its condition before it looks again. gRPC wakes every 0.1 s so
# that a main thread's signal handlers run (grpc/grpc#19464); under gevent the hub runs them whatever a
# greenlet waits on, and every waiting Subscribe stream would wake 10 times a second for nothing
# (5,000 wake-ups/s at 500 subscribers; benchmarks/subscriber_receive.py prices it).
GEVENT_WAIT_S = 60.0
# Native threads the gevent hub's threadpool may start. Under gevent, gRPC waits for a channel's next
# event (a stream's message, a unary call's reply) in a task of that pool, which keeps its thread until
# the event comes. gevent's default of 10 threads let a process's calls wait on 10 channels at most: with
# streams open at more brokers than that, the other channels' messages (and the publishers' calls)
# waited until one of the 10 got an event of its own, and forever if their streams stayed idle. The
# pool starts a thread only when a task waits for one, so this bounds, and costs, nothing in practice:
# a process's channels are at most one per broker (:class:`ClientPool`) plus its users' unary calls.
GEVENT_THREADS = 4096


def init_gevent(wait_s: float = GEVENT_WAIT_S, threads: int = GEVENT_THREADS) -> None:
    """gRPC's gevent mode for this process: its blocked calls wake only on their events (or every
    ``wait_s``), and up to ``threads`` of them wait at once. Call it before any channel exists, in a
    process that gevent has monkey-patched."""
    grpc_gevent.init_gevent()
    grpc_common.MAXIMUM_WAIT_TIMEOUT = wait_s
    pool = gevent.get_hub().threadpool
    pool.maxsize = max(pool.maxsize, threads)


class SubscribeError(RuntimeError):
    """A Subscribe stream that did not start with the broker's ack."""


class GrpcClient:
    """One channel to one broker; every call fires a Locust request event."""

    def __init__(self, address: str, environment: Environment, timeout_s: float = 10.0) -> None:
        self.address = address
        self.environment = environment
        self.timeout_s = timeout_s
        self.channel = tls.channel(
            address,
            options=[
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.initial_reconnect_backoff_ms", RECONNECT_BACKOFF_MS[0]),
                ("grpc.max_reconnect_backoff_ms", RECONNECT_BACKOFF_MS[1]),
            ],
        )
        self.broker = pbg.BrokerStub(self.channel)

    def _fire(self, rtype: str, name: str, start: float, length: int, exc: BaseException | None) -> None:
        self.environment.events.request.fire(
            request_type=rtype,
            name=name,
            response_time=(time.perf_counter() - start) * 1000.0,
            response_length=length,
            exception=exc,
            context={"broker": self.address},
        )

    def subscribe(self, sub_id: str, subscriber: str, flt: Filter) -> tuple[Any, pb.SubscribeAck]:
        """Open the stream and wait for its ack; returns (call, ack). The call iterates SubscribeEvents."""
        start = time.perf_counter()
        req = pb.SubscribeRequest(sub_id=sub_id, subscriber=subscriber, filter=filter_to_pb(flt))
        call = self.broker.Subscribe(req, wait_for_ready=False)
        try:
            first = next(call)
            if first.WhichOneof("event") != "ack":
                raise SubscribeError(f"subscription {sub_id} at {self.address}: first event is not an ack")
        except StopIteration:
            err = SubscribeError(f"subscription {sub_id} at {self.address}: the stream ended before its ack")
            self._fire("grpc", "Subscribe", start, 0, err)
            raise err from None
        except (grpc.RpcError, SubscribeError) as e:
            self._fire("grpc", "Subscribe", start, 0, e)
            raise
        self._fire("grpc", "Subscribe", start, first.ByteSize(), None)
        return call, first.ack

    def deliveries(self, call: Any) -> Iterator[tuple[pb.Delivery, int]]:
        """(delivery, receive time ns) pairs of an open stream until it ends or is cancelled."""
        try:
            for ev in call:
                now = time.time_ns()
                for d in ev.deliveries.items:
                    self.environment.events.request.fire(
                        request_type="deliver",
                        name="Delivery",
                        response_time=max(0.0, (now - d.notification.intended_ns) / 1e6),
                        response_length=d.ByteSize(),
                        exception=None,
                        context={"broker": self.address},
                    )
                    yield d, now
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                raise

    def unsubscribe(self, sub_id: str, subscriber: str) -> bool:
        start = time.perf_counter()
        try:
            reply = self.broker.Unsubscribe(
                pb.UnsubscribeRequest(sub_id=sub_id, subscriber=subscriber), timeout=self.timeout_s
            )
        except grpc.RpcError as e:
            self._fire("grpc", "Unsubscribe", start, 0, e)
            raise
        self._fire("grpc", "Unsubscribe", start, reply.ByteSize(), None)
        return bool(reply.found)

    def publish(self, notifications: Sequence[pb.Notification]) -> int:
        start = time.perf_counter()
        req = pb.PublishRequest(notifications=notifications)
        try:
            reply = self.broker.Publish(req, timeout=self.timeout_s)
        except grpc.RpcError as e:
            self._fire("grpc", "Publish", start, 0, e)
            raise
        self._fire("grpc", "Publish", start, req.ByteSize(), None)
        return int(reply.accepted)

    def serving(self, timeout_s: float = 1.0) -> bool:
        """Whether the broker answers a health check with SERVING: a probe of its session, not workload
        traffic (no request event)."""
        stub = health_pb2_grpc.HealthStub(self.channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=timeout_s)
        except grpc.RpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    def close(self) -> None:
        self.channel.close()


class ClientPool:
    """The :class:`GrpcClient` of each broker address, shared by every user of one Locust process.

    Under gevent a channel with a call open waits for its next event on a native thread of the hub's
    threadpool, and that thread takes the GIL every 200 ms (gRPC's interrupt check) while it waits. One
    channel per user would hold a thread per subscriber; one channel per broker bounds the threads by
    the overlay's size. A user's streams end by being cancelled, never by closing a shared channel.
    A session lost to a broker's outage asks for a fresh channel (:meth:`renew`), which resolves the
    broker's name again (a restarted pod has a new address) instead of waiting for the old channel's
    next resolution.
    """

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self._clients: dict[str, GrpcClient] = {}
        self._replaced: list[GrpcClient] = []  # streams of other users may still run on them

    def get(self, address: str) -> GrpcClient:
        if address not in self._clients:
            self._clients[address] = GrpcClient(address, self.environment)
        return self._clients[address]

    def renew(self, client: GrpcClient) -> GrpcClient:
        """A fresh client for ``client``'s broker, unless another user renewed it already: then that one.
        The old channel stays open for the streams other users still hold on it."""
        if self._clients.get(client.address) is client:
            self._replaced.append(client)
            del self._clients[client.address]
        return self.get(client.address)

    def close(self) -> None:
        for c in [*self._clients.values(), *self._replaced]:
            c.close()
        self._clients.clear()
        self._replaced.clear()


_pools: weakref.WeakKeyDictionary[Environment, ClientPool] = weakref.WeakKeyDictionary()


def client_pool(environment: Environment) -> ClientPool:
    """The process's :class:`ClientPool` (one per Locust environment), closed when Locust quits."""
    pool = _pools.get(environment)
    if pool is None:
        pool = _pools[environment] = ClientPool(environment)
        environment.events.quitting.add_listener(lambda **_: pool.close())
    return pool


class GrpcUser(User):
    """Abstract Locust user that talks to brokers through its process's shared :class:`ClientPool`."""

    abstract = True

    def client_for(self, address: str) -> GrpcClient:
        return client_pool(self.environment).get(address)

    def renew_client(self, client: GrpcClient) -> GrpcClient:
        """A fresh client for ``client``'s broker (a lost session's): :meth:`ClientPool.renew`."""
        return client_pool(self.environment).renew(client)
