"""Inter-broker links: one long-lived ``Link.Connect`` stream per directed overlay link.

Sender (:class:`LinkSender`, one task per neighbour). It dials the
neighbour, sends a *hello* (seq 0, one ``Control{kind: "hello"}`` envelope
whose ``incarnation`` identifies this broker process) and waits for the hello
to be acknowledged — a refused hello (unknown neighbour, other run) never
counts as connected. It then resends every unacknowledged batch in sequence
order and afterwards drains the output queue in batches of at most
``limits.max_batch_envelopes`` and ``limits.batch_bytes`` (an envelope that
could never fit was already dropped by the runtime), through the link's token bucket, with at most
:data:`MAX_IN_FLIGHT` unacknowledged batches (so a slow receiver shows up as
output-queue length, where the congestion detector looks). On any error it
redials with exponential backoff (``redial_initial_ms`` doubling up to
``redial_max_ms``, with jitter). Sequence numbers start at 1 per incarnation.
A neighbour with ``latency_ms``/``jitter_ms`` gets its batches through a
:class:`~scotbed.broker.latency.DelayLine` before the wire; ``Admin.SetLinkLatency``
changes the delay of the batches that leave the queue from then on, and shortens that of the
batches the line holds when it is lower.

Receiver (:class:`LinkReceiver`). It refuses a hello from a broker that is not
a configured neighbour with ``PERMISSION_DENIED``, decodes each envelope once,
puts it on the input queue and then acknowledges the batch (so an
acknowledged batch is in the broker and a graceful stop processes it). It
drops — but acknowledges — a batch it has already accepted: duplicates are
recognised by (from_broker, incarnation, seq), which is what makes resending
after a reconnection safe. A new process behind a neighbour (a restart) makes
the broker replay that link's sent log to it (:mod:`scotbed.broker.rejoin`). The
broker learns of it from whichever comes first: the new process's hello here,
or the incarnation in the ack of its own hello (the sender then replays before
it sends anything else: otherwise leftovers of an earlier replay, queued for
the dead process, would reach the new one as new routing); a ``replay`` control envelope marks the routing
envelopes that follow as a replay. A malformed envelope is counted (``rejected``) and
logged as a ``drop`` event; a malformed stream (no hello, wrong sender) is
aborted with ``INVALID_ARGUMENT`` naming what was wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc

from scotbed.broker import runtoken, tls
from scotbed.broker.latency import DelayLine
from scotbed.broker.limits import client_channel_options
from scotbed.broker.rejoin import REPLAYED, replay_count
from scotbed.broker.treeswap import end_of
from scotbed.contract import REFUSED
from scotbed.filters import FilterError
from scotbed.messages import Publication
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg
from scotbed.wire import from_envelope

if TYPE_CHECKING:
    from scotbed.broker.linkout import LinkOut
    from scotbed.broker.runtime import Broker

log = logging.getLogger("scotbed.broker.links")

MAX_IN_FLIGHT = 32  # unacknowledged batches per link


def new_incarnation() -> str:
    return f"{time.time_ns():x}-{os.getpid():x}"


def stream_incarnation(process: str, opening: int) -> str:
    """A link stream's incarnation: the process's, plus ``+N`` for the N-th link a relink opened."""
    return f"{process}+{opening}" if opening else process


def process_incarnation(stream: str) -> str:
    """The process behind a link stream: a reopened link is not a restarted neighbour."""
    return stream.partition("+")[0]


class LinkSender:
    def __init__(self, broker: Broker, link: LinkOut, incarnation: str) -> None:
        self.broker = broker
        self.link = link
        self.incarnation = incarnation
        self._broken: BaseException | None = None
        self.last_error = ""
        self.ever_connected = False
        self.delay = DelayLine(0.0, 0.0)

    async def run(self) -> None:
        limits = self.broker.cfg.limits
        backoff = limits.redial_initial_ms / 1000.0
        while True:
            try:
                await self._session()
            except asyncio.CancelledError:
                raise
            except grpc.aio.AioRpcError as e:
                self._note_error(f"{e.code().name}: {e.details()}")
            except Exception as e:
                self._note_error(f"{type(e).__name__}: {e}")
            if self.link.connected:
                backoff = limits.redial_initial_ms / 1000.0
                self.ever_connected = True
            self.link.connected = False
            await asyncio.sleep(backoff * (0.5 + random.random() / 2))
            backoff = min(backoff * 2, limits.redial_max_ms / 1000.0)

    def _note_error(self, text: str) -> None:
        if text != self.last_error:
            level = logging.WARNING if self.ever_connected else logging.INFO
            log.log(level, "%s -> %s: link down: %s", self.broker.id, self.link.id, text)
            self.last_error = text

    async def _session(self) -> None:
        broker, link = self.broker, self.link
        self._broken = None
        opts = client_channel_options(broker.cfg.limits.max_message_bytes)
        async with tls.aio_channel(link.neighbour.address, options=opts, name=broker.id) as channel:
            call = pbg.LinkStub(channel).Connect(metadata=runtoken.metadata(broker.cfg.run_token))
            hello = pb.Batch(from_broker=broker.id, seq=0, run_id=broker.cfg.run_id)
            hello.envelopes.add().control.kind = "hello"
            hello.envelopes[0].control.args["incarnation"] = self.incarnation
            await call.write(hello)
            first = await call.read()
            if first is grpc.aio.EOF:
                raise ConnectionError("the neighbour closed the stream before acknowledging the hello")
            if link.peer_is(process_incarnation(first.incarnation)):
                broker.neighbour_restarted(link.id)  # the replay goes first, before any queued routing
            link.connected = True
            self.last_error = ""
            reader = asyncio.create_task(self._read_acks(call))
            self.delay = link.line = DelayLine(*link.latency)
            writer = asyncio.create_task(self._write_delayed(call))
            try:
                for seq in sorted(link.unacked):
                    await self._write(call, link.unacked[seq])
                while True:
                    await self._write(call, await self._next_batch())
            finally:
                link.line = None  # what it held is unacknowledged: the next session resends it
                for task in (reader, writer):
                    if task is not None:
                        task.cancel()
                call.cancel()

    async def _write(self, call: Any, batch: pb.Batch) -> None:
        if self.delay.in_use:
            self.delay.put(batch)
        else:
            await call.write(batch)

    async def _write_delayed(self, call: Any) -> None:
        try:
            await self.delay.drain_to(call.write)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            self._broken = e
            self.link.wake.set()

    async def _read_acks(self, call: Any) -> None:
        link = self.link
        try:
            while (ack := await call.read()) is not grpc.aio.EOF:
                if link.acked(ack.seq):
                    self.broker.last_activity_ns = time.time_ns()
                link.wake.set()
            self._broken = ConnectionError("the neighbour ended the link stream")
        except asyncio.CancelledError:
            raise
        except Exception as e:
            self._broken = e
        link.wake.set()

    async def _next_batch(self) -> pb.Batch:
        link = self.link
        limits = self.broker.cfg.limits
        while True:
            if self._broken is not None:
                raise self._broken
            if link.queue and len(link.unacked) - len(self.delay.pending) < MAX_IN_FLIGHT:
                n = min(len(link.queue), limits.max_batch_envelopes)
                if link.capacity > 0:
                    tokens = link.refill()
                    if tokens < 1.0:  # wait for a token, or for SetLinkCapacity to change the rate
                        link.wake.clear()
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(link.wake.wait(), (1.0 - tokens) / link.capacity)
                        continue
                    n = min(n, int(tokens))
                envelopes = _take(link.queue, n, limits.batch_bytes)
                n = len(envelopes)
                if link.capacity > 0:
                    link.tokens -= n
                batch = pb.Batch(from_broker=self.broker.id, seq=link.next_seq, envelopes=envelopes)
                link.unacked[link.next_seq] = batch
                link.next_seq += 1
                link.unacked_envelopes += n
                link.window.count_out(n)
                link.sent += n
                return batch
            link.wake.clear()
            await link.wake.wait()


ENVELOPE_TAG_BYTES = 6  # field tag and length prefix of one envelope inside a batch, at most


def _take(queue: deque[tuple[pb.Envelope, int]], n: int, max_bytes: int) -> list[pb.Envelope]:
    """Up to ``n`` envelopes off the queue's head, at most ``max_bytes`` of them (always at least one).

    Sizes come with the queued envelopes (measured once by the runtime), so batching encodes nothing.
    """
    env, size = queue.popleft()
    out = [env]
    while len(out) < n:
        size += queue[0][1] + ENVELOPE_TAG_BYTES
        if size > max_bytes:
            break
        out.append(queue.popleft()[0])
    return out


@dataclass
class _RxState:
    incarnation: str = ""
    last_seq: int = 0
    replay_left: int = 0  # routing envelopes still to come in a replay (scotbed.broker.rejoin)


class LinkReceiver:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._state: dict[str, _RxState] = {}

    async def connect(self, requests: AsyncIterator[pb.Batch], context: Any) -> AsyncIterator[pb.BatchAck]:
        broker = self.broker
        it = requests.__aiter__()
        try:
            hello = await it.__anext__()
        except StopAsyncIteration:
            return
        peer = hello.from_broker
        if peer not in broker.links:
            broker.counters["refused"] += 1
            broker.events.emit(REFUSED, link=peer, reason="unknown_neighbour")  # a hello: nothing lost
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED, f"{peer!r} is not a neighbour of broker {broker.id!r}"
            )
        if broker.cfg.run_id and hello.run_id != broker.cfg.run_id:
            broker.counters["refused"] += 1
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"{peer!r} belongs to run {hello.run_id!r}, broker {broker.id!r} to {broker.cfg.run_id!r}",
            )
        if hello.seq != 0 or len(hello.envelopes) != 1 or hello.envelopes[0].control.kind != "hello":
            broker.counters["rejected"] += 1
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "the first batch must be a hello: seq 0, one hello control"
            )
        incarnation = hello.envelopes[0].control.args.get("incarnation", "")
        state = self._state.setdefault(peer, _RxState())
        if state.incarnation != incarnation:
            state.incarnation, state.last_seq, state.replay_left = incarnation, 0, 0
        link = broker.links[peer]
        if link.peer_is(process_incarnation(incarnation)):  # not a link reopened by a relink
            broker.neighbour_restarted(peer)
        yield pb.BatchAck(seq=0, incarnation=broker.incarnation)
        async for batch in it:
            if batch.from_broker != peer:
                broker.counters["rejected"] += 1
                await context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"batch from {batch.from_broker!r} on the link stream of {peer!r}",
                )
            if state.incarnation != incarnation:  # a newer stream of the same peer took over
                await context.abort(grpc.StatusCode.ABORTED, "superseded by a newer link stream")
            if broker.links.get(peer) is not link:  # closed (or closed and reopened) by a relink
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"the link to {peer!r} was closed")
            if batch.seq <= state.last_seq:
                broker.counters["duplicate_batches"] += 1
            else:
                self._accept(peer, link, batch, state)
                state.last_seq = batch.seq
            yield pb.BatchAck(seq=batch.seq)

    def _accept(self, peer: str, link: LinkOut, batch: pb.Batch, state: _RxState) -> None:
        broker = self.broker
        for k, env in enumerate(batch.envelopes):
            if (n := replay_count(env)) is not None:
                state.replay_left = n
                continue
            try:
                msg = from_envelope(env)
            except (FilterError, ValueError) as e:
                broker.counters["rejected"] += 1
                broker.drop(peer, f"malformed: batch {batch.seq} envelope {k}: {e}")
                continue
            if msg is None:
                if broker.topology is not None and broker.topology.owns(env.control):
                    broker.topology.receive(peer, env.control)  # background, like samples: no counter
                    continue
                broker.counters["control"] += 1
                end = end_of(env.control) if env.WhichOneof("body") == "control" else None
                if end is not None:
                    broker.submit(peer, end)
                continue
            msg.hops += 1
            link.received += 1
            raw: Any = env.notification.notification if isinstance(msg, Publication) else None
            if raw is None and state.replay_left > 0:
                state.replay_left -= 1
                raw = REPLAYED
            broker.submit(peer, msg, raw)
        broker.last_activity_ns = time.time_ns()
