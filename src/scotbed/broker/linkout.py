"""The output side of one directed link, as the broker's processing loop and the link sender share it.

The processing loop appends encoded envelopes to ``queue``; the sender
(:class:`scotbed.broker.links.LinkSender`) takes batches off it within the
token bucket's capacity, numbers them and keeps them in ``unacked`` until the
neighbour acknowledges them. The CE window counts envelopes in and out for
DNR's congestion estimate (OctopiS Eq. 3).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

from scotbed.broker.latency import DelayLine
from scotbed.broker.rejoin import SentLog, Sized, replay_count
from scotbed.config import NeighbourConfig
from scotbed.v1 import scotbed_pb2 as pb


class CeWindow:
    """Envelopes in and out of a link per window of Δt, and the CE of the last closed window (Eq. 3).

    Windows lie on a grid of Δt and close when the CE is read or counted past their end, so an idle
    broker runs no timer for them (a ticker cost it more CPU than anything else while idle). The CE
    is in/out of the last closed window, or in when nothing went out; after an empty window it is 0.
    """

    def __init__(self, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self._clock = clock
        self._start = clock()
        self._in = self._out = 0
        self._ce = 0.0

    def _roll(self) -> None:
        elapsed = self._clock() - self._start
        if elapsed < self.window_s:
            return
        closed = int(elapsed // self.window_s)
        i, o = self._in, self._out
        self._ce = (i / o if o > 0 else float(i)) if closed == 1 else 0.0
        self._in = self._out = 0
        self._start += closed * self.window_s

    def count_in(self, n: int) -> None:
        self._roll()
        self._in += n

    def count_out(self, n: int) -> None:
        self._roll()
        self._out += n

    @property
    def ce(self) -> float:
        self._roll()
        return self._ce


class LinkOut:
    """Output side of one directed link: queue, token bucket, CE window, sequence and ack state."""

    def __init__(self, neighbour: NeighbourConfig, capacity: float, backlog: int, window_s: float) -> None:
        self.neighbour = neighbour
        self.id = neighbour.id
        self.queue: deque[tuple[pb.Envelope, int]] = deque()  # (envelope, its encoded bytes)
        self.backlog = backlog
        self.capacity = 0.0
        self.tokens = 0.0
        self.burst = 1.0
        self.refilled = time.monotonic()
        self.wake = asyncio.Event()
        self.set_capacity(capacity)
        self.window = CeWindow(window_s)
        self.sent = 0
        self.received = 0
        self.dropped = 0
        self.next_seq = 1
        self.unacked: dict[int, pb.Batch] = {}
        self.unacked_envelopes = 0
        self.connected = False
        self.sent_log = SentLog()  # routing envelopes queued here: replayed when the neighbour restarts
        self.latency = (neighbour.latency_ms, neighbour.jitter_ms)  # ms; Admin.SetLinkLatency changes it
        self.line: DelayLine | None = None  # the connected sender's delay line, which a new latency reaches
        self.peer_process = ""  # the neighbour's process incarnation, from either direction's hello
        self._replaying: set[int] = set()  # the last replay block's queue items (their ids)
        self._replaying_bytes: set[bytes] = set()  # and its routing envelopes, encoded

    def set_capacity(self, capacity: float) -> None:
        """Envelopes/s; 0 = unlimited. The burst is 10 ms of capacity (at least one envelope)."""
        self.capacity = max(0.0, capacity)
        self.burst = max(1.0, self.capacity / 100.0)
        self.tokens = min(self.tokens, self.burst)
        self.refilled = time.monotonic()
        self.wake.set()

    def set_latency(self, latency_ms: float, jitter_ms: float) -> None:
        """A new propagation delay: for the batches sent from now on, and those the line still holds."""
        self.latency = (latency_ms, jitter_ms)
        if self.line is not None:
            self.line.set(latency_ms, jitter_ms)

    def refill(self) -> float:
        now = time.monotonic()
        if self.capacity > 0:
            self.tokens = min(self.burst, self.tokens + (now - self.refilled) * self.capacity)
        self.refilled = now
        return self.tokens

    @property
    def ce(self) -> float:
        return self.window.ce

    def acked(self, seq: int) -> int:
        """Cumulative ack: forget every batch up to ``seq``; returns envelopes acknowledged."""
        done = 0
        for s in [s for s in self.unacked if s <= seq]:
            done += len(self.unacked.pop(s).envelopes)
        self.unacked_envelopes -= done
        return done

    def peer_is(self, process: str) -> bool:
        """Note the neighbour's process, learnt from its hello (receiver) or its hello ack (sender);
        True the first time a new process follows another: the neighbour restarted. Either direction
        may learn it first; the outbound stream must, before it sends the new process anything."""
        if not process:
            return False
        known, self.peer_process = self.peer_process, process
        return bool(known) and known != process

    def replay(self) -> int:
        """The neighbour restarted: start its replay over (:mod:`scotbed.broker.rejoin`); returns its
        routing envelopes.

        What is left of an earlier replay (a restart during the replay) leaves the queue and the
        unacknowledged batches (they would reach the new process as new routing); the new block
        leaves out what is still queued or unacknowledged, which the new process gets as sent.
        """
        queued = [item for item in self.queue if id(item) not in self._replaying]
        self.queue.clear()
        self.queue.extend(queued)
        for seq, batch in list(self.unacked.items()):
            keep = [e for e in batch.envelopes if not self._stale(e)]
            if len(keep) != len(batch.envelopes):
                self.unacked_envelopes -= len(batch.envelopes) - len(keep)
                self.unacked[seq] = pb.Batch(from_broker=batch.from_broker, seq=seq, envelopes=keep)
        in_queue = {id(item) for item in queued}
        in_flight = {e.SerializeToString() for b in self.unacked.values() for e in b.envelopes}

        def pending(item: Sized) -> bool:
            return id(item) in in_queue or item[0].SerializeToString() in in_flight

        block = self.sent_log.replay(pending)
        self._replaying = {id(item) for item in block}
        self._replaying_bytes = {env.SerializeToString() for env, _ in block[1:]}
        self.queue.extendleft(reversed(block))
        self.window.count_in(len(block))
        self.wake.set()
        return len(block) - 1

    def _stale(self, env: pb.Envelope) -> bool:
        return replay_count(env) is not None or env.SerializeToString() in self._replaying_bytes
