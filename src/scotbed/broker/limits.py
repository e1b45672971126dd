"""Admission checks on what clients send, and the gRPC settings both ends of a channel must share.

The numbers live in :class:`scotbed.config.LimitsConfig` (units in the field
names); this module applies them. A client request is checked *before* the
broker acknowledges it, so an oversized subscription is refused to its
client — never accepted and then stuck on a link. Every refusal names the
limit and the value; the server counts it as ``rejected``.

Keepalive. Link senders ping every :attr:`Keepalive.time_ms` (also on an
idle stream); a gRPC server treats pings closer together than its
``grpc.http2.min_ping_interval_without_data_ms`` (default 5 min) as strikes
and, after ``grpc.http2.max_ping_strikes``, closes the connection with a
``too_many_pings`` GOAWAY. So servers accept pings at half the client period,
and without calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc

from scotbed.config import LimitsConfig
from scotbed.v1 import scotbed_pb2 as pb


@dataclass(frozen=True)
class Keepalive:
    time_ms: int = 10_000  # a client pings after this long without reads
    timeout_ms: int = 5_000  # ... and drops the connection when the ping is not answered within this
    server_min_ping_interval_ms: int = 5_000  # what a server accepts: must be <= time_ms


KEEPALIVE = Keepalive()


def _channel_options(max_message_bytes: int, ka: Keepalive) -> list[tuple[str, Any]]:
    """What both ends set alike: message size limits, and pinging every ``time_ms``, also without calls."""
    return [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.keepalive_time_ms", ka.time_ms),
        ("grpc.keepalive_timeout_ms", ka.timeout_ms),
        ("grpc.keepalive_permit_without_calls", 1),
    ]


def client_channel_options(max_message_bytes: int, ka: Keepalive = KEEPALIVE) -> list[tuple[str, Any]]:
    """Options of a link sender's channel (pings on idle streams)."""
    return [*_channel_options(max_message_bytes, ka), ("grpc.http2.max_pings_without_data", 0)]


def server_options(max_receive_bytes: int, ka: Keepalive = KEEPALIVE) -> list[tuple[str, Any]]:
    """Options of a broker's server: accepts the pings :func:`client_channel_options` sends."""
    return [
        *_channel_options(max_receive_bytes, ka),
        ("grpc.http2.min_ping_interval_without_data_ms", ka.server_min_ping_interval_ms),
        ("grpc.http2.max_ping_strikes", 2),
    ]


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: the gRPC status and a message naming the limit."""

    code: grpc.StatusCode
    text: str


def _too_big(what: str, size: int, name: str, limit: int) -> Refusal | None:
    if size > limit:
        return Refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, f"{what}: {size} exceeds limits.{name} = {limit}")
    return None


def _id(what: str, value: str, limits: LimitsConfig) -> Refusal | None:
    size = len(value.encode())
    return _too_big(f"{what} of {size} bytes", size, "max_id_bytes", limits.max_id_bytes)


def check_subscribe(req: pb.SubscribeRequest, limits: LimitsConfig) -> Refusal | None:
    """Size checks of a Subscribe request (the filter's content is checked by the filter model)."""
    return (
        _id("sub_id", req.sub_id, limits)
        or _id("subscriber", req.subscriber, limits)
        or _too_big(
            f"subscription {req.sub_id[:64]!r}: filter predicates",
            len(req.filter.predicates),
            "max_filter_predicates",
            limits.max_filter_predicates,
        )
        or _too_big(
            f"subscription {req.sub_id[:64]!r}: filter bytes",
            req.filter.ByteSize(),
            "max_filter_bytes",
            limits.max_filter_bytes,
        )
    )


def check_notification(k: int, n: pb.Notification, size: int, limits: LimitsConfig) -> Refusal | None:
    """Checks of the ``k``-th notification of a request, ``size`` its encoded bytes."""
    where = f"notifications[{k}]"
    return (
        _id(f"{where}.pub_id", n.pub_id, limits)
        or _id(f"{where}.publisher", n.publisher, limits)
        or _too_big(
            f"{where}: attributes", len(n.attrs), "max_notification_attrs", limits.max_notification_attrs
        )
        or _too_big(f"{where}: bytes", size, "max_notification_bytes", limits.max_notification_bytes)
    )


def _field_bytes(size: int) -> int:
    """Encoded bytes of a length-delimited field numbered below 16 holding ``size`` bytes."""
    return 1 + max(1, (size.bit_length() + 6) // 7) + size


def check_publish(req: pb.PublishRequest, limits: LimitsConfig) -> Refusal | None:
    """The request's and each notification's limits; every notification is encoded once, to measure it.

    The request's size is derived from its notifications' (its only field), not encoded a second time.
    """
    sizes = [n.ByteSize() for n in req.notifications]
    size = sum(_field_bytes(s) for s in sizes)
    refusal = _too_big("publish request bytes", size, "max_message_bytes", limits.max_message_bytes)
    if refusal is not None:
        return refusal
    for k, n in enumerate(req.notifications):
        refusal = check_notification(k, n, sizes[k], limits)
        if refusal is not None:
            return refusal
    return None


def envelope_fits(size: int, limits: LimitsConfig) -> bool:
    """Whether an envelope of ``size`` bytes fits a batch (and so can ever be sent on a link)."""
    return size <= limits.batch_bytes
