"""Admin RPCs to a fleet of brokers: health, status, routing tables, flush, and the quiescence barrier.

Used by the process launcher (:mod:`scotbed.broker.launcher`), by the run lifecycle on any
backend (it only needs the brokers' admin addresses), by tests and benchmarks. One channel per
broker for a series of calls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from scotbed.broker import runtoken, tls
from scotbed.errors import ScotbedError
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg


async def health(channel: grpc.aio.Channel) -> tuple[bool, str]:
    try:
        reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1.0)
    except grpc.aio.AioRpcError as e:
        return False, f"{e.code().name}: {e.details()}"
    return (
        reply.status == health_pb2.HealthCheckResponse.SERVING,
        health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status),
    )


class Unanswered(ScotbedError, RuntimeError):
    """Brokers that did not answer an admin call; the message names each one, the call and why."""

    def __init__(self, method: str, failed: Mapping[str, grpc.aio.AioRpcError], timeout_s: float) -> None:
        self.failed = dict(failed)
        names = "; ".join(f"{i} ({e.code().name}: {e.details()})" for i, e in sorted(failed.items()))
        super().__init__(f"{len(failed)} broker(s) did not answer {method} within {timeout_s:g} s: {names}")


class _Admins:
    """One channel per broker for a series of admin calls (cheaper than a channel per call)."""

    def __init__(self, addresses: Mapping[str, str]) -> None:
        self._channels = {i: tls.aio_channel(a) for i, a in addresses.items()}
        self.stubs = {i: pbg.AdminStub(c) for i, c in self._channels.items()}
        self._token = runtoken.metadata()  # this process's run token, if any

    async def answers(
        self, method: str, request: Any, timeout_s: float
    ) -> tuple[dict[str, Any], dict[str, grpc.aio.AioRpcError]]:
        """The replies of the brokers that answered within ``timeout_s``, and the errors of the others."""
        ids = list(self.stubs)
        results = await asyncio.gather(
            *(getattr(self.stubs[i], method)(request, timeout=timeout_s, metadata=self._token) for i in ids),
            return_exceptions=True,
        )
        replies, failed = {}, {}
        for i, r in zip(ids, results, strict=True):
            if isinstance(r, grpc.aio.AioRpcError):
                failed[i] = r
            elif isinstance(r, BaseException):
                raise r
            else:
                replies[i] = r
        return replies, failed

    async def each(self, method: str, request: Any, timeout_s: float) -> dict[str, Any]:
        """Every broker's reply; :class:`Unanswered` names those that did not answer."""
        replies, failed = await self.answers(method, request, timeout_s)
        if failed:
            raise Unanswered(method, failed, timeout_s)
        return replies

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self._channels.values()), return_exceptions=True)


async def _each(addresses: Mapping[str, str], method: str, request: Any, timeout_s: float) -> dict[str, Any]:
    admins = _Admins(addresses)
    try:
        return await admins.each(method, request, timeout_s)
    finally:
        await admins.close()


async def status_all(addresses: Mapping[str, str], timeout_s: float = 5.0) -> dict[str, pb.StatusReply]:
    return await _each(addresses, "Status", pb.StatusRequest(), timeout_s)


async def tables_all(addresses: Mapping[str, str], timeout_s: float = 10.0) -> dict[str, pb.TableReply]:
    return await _each(addresses, "RoutingTable", pb.TableRequest(), timeout_s)


async def flush_all(addresses: Mapping[str, str], timeout_s: float = 10.0) -> dict[str, int]:
    replies = await _each(addresses, "Flush", pb.FlushRequest(), timeout_s)
    return {i: int(r.events_written) for i, r in replies.items()}


ERRORS = "errors"  # the counter of messages the routing plug-in raised on (scotbed.broker.runtime)


def routing_errors(replies: Mapping[str, pb.StatusReply]) -> str | None:
    """Brokers whose routing plug-in raised on a message, named with how often, or None: each such
    message was dropped (a ``drop`` event with the error), so the run's routing is not the plug-in's."""
    bad = {i: int(r.counters.get(ERRORS, 0)) for i, r in sorted(replies.items()) if r.counters.get(ERRORS, 0)}
    if not bad:
        return None
    names = ", ".join(f"{i} ({n})" for i, n in bad.items())
    return f"routing failed on messages at {len(bad)} broker(s): {names}; see their stderr and drop events"


def _fingerprint(replies: Mapping[str, pb.StatusReply]) -> dict[str, dict[str, int]]:
    return {i: dict(r.counters) for i, r in replies.items()}


OnPoll = Callable[[Mapping[str, pb.StatusReply]], None]
STATUS_TIMEOUT_S = 5.0  # one Status round of the quiescence barrier


async def wait_quiescent(
    addresses: Mapping[str, str],
    timeout_s: float = 30.0,
    stable_s: float = 0.2,
    poll_s: float = 0.05,
    on_poll: OnPoll | None = None,
) -> dict[str, pb.StatusReply]:
    """Wait until every broker is quiescent and no counter changed for ``stable_s``; returns the last status.

    ``on_poll`` sees every round of replies (progress, or a check that raises to stop waiting), also a
    round some broker did not answer (then without its reply). Raises :class:`TimeoutError` naming the
    brokers that are still busy or did not answer in time, :class:`Unanswered` naming those that
    answered with an error (a broker that is gone).
    """
    admins = _Admins(addresses)
    try:
        return await _wait_quiescent(admins, timeout_s, stable_s, poll_s, on_poll)
    finally:
        await admins.close()


async def _wait_quiescent(
    admins: _Admins, timeout_s: float, stable_s: float, poll_s: float, on_poll: OnPoll | None = None
) -> dict[str, pb.StatusReply]:
    deadline = time.monotonic() + timeout_s
    stable_since: float | None = None
    previous: dict[str, dict[str, int]] | None = None
    while True:
        replies, failed = await admins.answers("Status", pb.StatusRequest(), STATUS_TIMEOUT_S)
        if on_poll is not None:  # every round, also one a broker did not answer: its check may name why
            on_poll(replies)
        broken = {i: e for i, e in failed.items() if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED}
        if broken:
            raise Unanswered("Status", broken, STATUS_TIMEOUT_S)
        now = time.monotonic()
        if failed:  # a broker too busy to answer is not quiescent; a saturated host is slow, not broken
            if now >= deadline:
                raise TimeoutError(
                    f"not quiescent after {timeout_s:.0f} s: {Unanswered('Status', failed, STATUS_TIMEOUT_S)}"
                )
            stable_since, previous = None, None
            continue
        fp = _fingerprint(replies)
        if all(r.quiescent for r in replies.values()) and fp == previous:
            if stable_since is None:
                stable_since = now
            if now - stable_since >= stable_s:
                return replies
        else:
            stable_since = None
        previous = fp
        if now >= deadline:
            busy = [
                f"{i} (input {r.input_len}, out {sum(x.output_len for x in r.links)}, "
                f"unacked {sum(x.unacked for x in r.links)})"
                for i, r in replies.items()
                if not r.quiescent
            ]
            raise TimeoutError(
                f"not quiescent after {timeout_s:.0f} s: {', '.join(busy) or 'counters still changing'}"
            )
        await asyncio.sleep(poll_s)
