"""Simulation mode: rounds plus message events, joins and failures, a per-round message capacity.

Each round every live peer ticks (gossip, refresh, load), then events are published; messages are
delivered one by one (zero latency, FIFO) until none is left. A message to a failed peer comes back
to its sender as :meth:`Peer.unreachable` (what a gRPC channel error tells a process). With a
capacity X, a peer takes at most X event messages per round and drops the rest (paper §V-D).
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence

from scotbed.vinifera.config import PeerConfig
from scotbed.vinifera.interest import Event, Subscription
from scotbed.vinifera.messages import EventMsg, Msg
from scotbed.vinifera.metrics import EventRecord
from scotbed.vinifera.peer import Peer
from scotbed.vinifera.ring import union

PeerFactory = Callable[[int, int, Subscription | None, PeerConfig, random.Random], Peer]


class Simulation:
    """Live peers by name, the message queue, per-event records and traffic counts per kind."""

    def __init__(self, cfg: PeerConfig, make: PeerFactory = Peer, capacity: int | None = None, seed: int = 0):
        self.cfg, self.make, self.capacity = cfg, make, capacity
        self.rng = random.Random(seed)
        self.peers: dict[int, Peer] = {}
        self.now = 0
        self.records: dict[int, EventRecord] = {}
        self.traffic: Counter[str] = Counter()
        self._queue: deque[Msg] = deque()
        self._taken: Counter[int] = Counter()
        self._next_name = 0
        #: every message taken by a live peer, in order, when a list is set (tests, debugging)
        self.trace: list[Msg] | None = None

    def join(self, ident: int, sub: Subscription | None, contacts: Iterable[int]) -> Peer:
        """A new peer with the given id bootstraps from live contacts."""
        name = self._next_name
        self._next_name += 1
        peer = self.make(name, ident, sub, self.cfg, random.Random(self.rng.getrandbits(64)))
        peer.bootstrap([self.peers[c].desc for c in contacts if c in self.peers])
        self.peers[name] = peer
        return peer

    def fail(self, name: int) -> None:
        self.peers.pop(name, None)

    def round(self, publications: Sequence[tuple[int, Event]] = ()) -> list[int]:
        """One round; returns the ids of the events published in it."""
        self.now += 1
        self._taken.clear()
        names = list(self.peers)
        self.rng.shuffle(names)
        for n in names:
            if n in self.peers:
                self._send(self.peers[n].tick(self.now))
                self._pump()
        return [self.publish(pub, ev) for pub, ev in publications]

    def publish(self, publisher: int, event: Event) -> int:
        eid = len(self.records)
        interested = frozenset(n for n, p in self.peers.items() if p.sub is not None and p.sub.matches(event))
        self.records[eid] = EventRecord(eid, publisher, self.now, interested)
        peer = self.peers[publisher]
        self._send(peer.publish(eid, event, self.now))
        self._drain(peer)
        self._pump()
        return eid

    def add(self, peer: Peer) -> None:
        """A peer built by hand (fixed ids and links, scripted cases)."""
        self.peers[peer.name] = peer
        self._next_name = max(self._next_name, peer.name + 1)

    def inject(self, msgs: Iterable[Msg]) -> None:
        """Send what a peer returned outside a round (a scripted subscribe) and deliver it all."""
        self._send(msgs)
        self._pump()

    def _send(self, msgs: Iterable[Msg]) -> None:
        for m in msgs:
            self.traffic[type(m).__name__] += 1
            self._queue.append(m)

    def _pump(self) -> None:
        while self._queue:
            msg = self._queue.popleft()
            dst = self.peers.get(msg.dst)
            if dst is None:
                src = self.peers.get(msg.src)
                if src is not None:
                    self._send(src.unreachable(msg.dst, msg))
                continue
            if isinstance(msg, EventMsg):
                rec = self.records[msg.eid]
                self._taken[msg.dst] += 1
                if self.capacity is not None and self._taken[msg.dst] > self.capacity:
                    rec.dropped += 1
                    continue
                rec.received[msg.dst] = rec.received.get(msg.dst, 0) + 1
            if self.trace is not None:
                self.trace.append(msg)
            self._send(dst.receive(msg, self.now))
            self._drain(dst)

    def _drain(self, peer: Peer) -> None:
        for eid, hops, tree_hops in peer.deliveries:
            rec = self.records[eid]
            if peer.name in rec.deliveries:
                rec.extra_deliveries += 1
            else:
                rec.deliveries[peer.name] = hops
                rec.tree_hops[peer.name] = tree_hops
        peer.deliveries.clear()

    def grow(self, ids: Sequence[int], subs: Sequence[Subscription | None], contacts: int = 5) -> list[int]:
        """Join peers one by one, each bootstrapping from up to ``contacts`` random live peers."""
        out = []
        for ident, sub in zip(ids, subs, strict=True):
            live = sorted(self.peers)
            out.append(self.join(ident, sub, self.rng.sample(live, min(contacts, len(live)))).name)
        return out

    def partition_ok(self) -> bool:
        """Every point of the ring has exactly one live owner (one rendezvous)."""
        pieces = sorted(iv for p in self.peers.values() for iv in p.own())
        covered = sum(hi - lo + 1 for lo, hi in pieces)
        return covered == self.cfg.id_space and union(pieces) == [(0, self.cfg.id_space - 1)]

    def ring_ok(self) -> bool:
        """Every live peer's predecessor and successor are its neighbours among the sorted live ids."""
        ids = sorted((p.id, n) for n, p in self.peers.items())
        for i, (_, n) in enumerate(ids):
            p = self.peers[n]
            want_succ, want_pred = ids[(i + 1) % len(ids)][1], ids[i - 1][1]
            if p.succ is None or p.pred is None or (p.succ.name, p.pred.name) != (want_succ, want_pred):
                return False
            if (p.succ.id, p.pred.id) != (self.peers[want_succ].id, self.peers[want_pred].id):
                return False
        return True
