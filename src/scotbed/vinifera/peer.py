"""One Vinifera peer as a state machine: ``tick`` (a gossip round), ``receive`` (a message),
``publish`` and ``unreachable`` each return the messages to send; nothing here does I/O.

Routing follows the paper with the readings' fixes: greedy to the closest link not past the point,
Algorithm 2's range lookup split at the targets, CRTs installed on the way and expiring, events
sent to the RV of each attribute's point and down the CRTs, delivery once per event. The policy
hooks (:meth:`Peer.install_attr`, :meth:`Peer.lookup_iv`, :meth:`Peer.event_point`) are what the
Ferry-like baseline overrides.
"""

from __future__ import annotations

import random
from dataclasses import replace

from scotbed.vinifera.config import PeerConfig
from scotbed.vinifera.crt import CRT
from scotbed.vinifera.interest import Event, Subscription, most_overlapped, overlapping_attrs
from scotbed.vinifera.messages import ROUTE, TREE, Desc, EventMsg, Gossip, Load, Lookup, Moved, Msg, Shuffle
from scotbed.vinifera.overlay import (
    Cyclon,
    freshest,
    friends,
    harmonic_distances,
    ring_neighbours,
    small_world,
    utility_on,
)
from scotbed.vinifera.ring import Interval, contains, cw, in_any, ophash, owned, split_at, subtract

#: how many recent RV points a peer keeps to tell its predecessor where to move
RV_MEMORY = 256


def peer_rng(seed: int, name: int) -> random.Random:
    """Peer ``name``'s own random stream in a run of ``seed``: the same in a peer process and in the
    simulator's run of the same spec, so the two start from the same peers."""
    return random.Random(seed * 7919 + name)


class Peer:
    """A peer: broker and client in one (ring links, friends, small-world links, Cyclon view, CRT)."""

    def __init__(self, name: int, ident: int, sub: Subscription | None, cfg: PeerConfig, rng: random.Random):
        self.name, self.id, self.ver, self.sub, self.cfg, self.rng = name, ident, 0, sub, cfg, rng
        self.succs: list[Desc] = []
        self.preds: list[Desc] = []
        self.friend_links: list[Desc] = []
        self.sw_links: list[Desc] = []
        self.cyclon = Cyclon(cfg.view_size, cfg.shuffle_len)
        self.crt = CRT()
        self.primary: str | None = None
        self.seen: set[tuple[int, str]] = set()
        self.delivered: dict[int, int] = {}
        #: (event id, hops, hops from the RV) delivered since the driver last drained it
        self.deliveries: list[tuple[int, int, int]] = []
        self.duplicates = 0
        self.load = 0
        self.rv_points: list[int] = []
        self._sent: dict[int, tuple[Desc, ...]] = {}
        self._turn = 0
        #: the clockwise distances small-world links aim at, drawn once (sticky links)
        self.sw_targets = harmonic_distances(cfg.k_sw + cfg.k_f, cfg.id_space, rng)
        #: per peer name (a subscription never changes): utility on the primary attribute, and the
        #: attributes on which its subscription overlaps ours (Algorithm 1's counts)
        self._utils: dict[int, float] = {}
        self._overlaps: dict[int, tuple[str, ...]] = {}
        #: peers a message to failed: their descriptors, still gossiped by others, are ignored
        self.dead: set[int] = set()
        #: after an id move, (taken points, old owner, until round): tree copies also go to the old
        #: owner, whose CRT rows for those points live until the subscribers' lookups come round
        self.handover: tuple[list[Interval], int, int] | None = None

    # --- policy hooks (the baseline overrides these) ---
    def install_attr(self) -> str | None:
        """The attribute this peer installs its subscription on: its primary attribute."""
        return self.primary

    def lookup_iv(self, attr: str) -> Interval:
        assert self.sub is not None
        rng = self.sub.get(attr)
        assert rng is not None
        lo, hi = self.cfg.domain(attr)
        m = self.cfg.id_space
        return (ophash(rng[0], lo, hi, m), ophash(rng[1], lo, hi, m))

    def event_point(self, attr: str, value: float) -> int:
        lo, hi = self.cfg.domain(attr)
        return ophash(value, lo, hi, self.cfg.id_space)

    # --- views ---
    @property
    def desc(self) -> Desc:
        return Desc(self.name, self.id, self.ver, self.sub)

    @property
    def succ(self) -> Desc | None:
        return self.succs[0] if self.succs else None

    @property
    def pred(self) -> Desc | None:
        return self.preds[0] if self.preds else None

    def links(self) -> list[Desc]:
        """Ring links (successor, predecessor), friend and small-world links, without repeats."""
        ring = [d for d in (self.succ, self.pred) if d is not None]
        return list(freshest([*ring, *self.friend_links, *self.sw_links], self.name).values())

    def own(self) -> list[Interval]:
        pred = self.pred
        return owned(pred.id if pred else self.id, self.id, self.cfg.id_space)

    def bootstrap(self, contacts: list[Desc]) -> None:
        """Join: the contacts fill the Cyclon view and seed the ranking."""
        for d in contacts:
            if d.name != self.name and len(self.cyclon.view) < self.cyclon.size:
                self.cyclon.view[d.name] = (d, 0)
        self.learn(contacts)

    def learn(self, descs: list[Desc] | tuple[Desc, ...]) -> None:
        """T-Man: re-rank every link from the current links, the Cyclon view and ``descs``."""
        known = [*self.succs, *self.preds, *self.friend_links, *self.sw_links, *self.cyclon.descs()]
        pool = [d for d in freshest([*known, *descs], self.name).values() if d.name not in self.dead]
        m = self.cfg.id_space
        self.succs, self.preds = ring_neighbours(self.desc, pool, m, self.cfg.ring_cache)
        if self.sub is not None:
            self.primary = self._primary(pool)
        ring = {d.name for d in (self.succ, self.pred) if d is not None}
        rest = [d for d in pool if d.name not in ring]
        self.friend_links = friends(self.desc, rest, self._utility, self.cfg.k_f, m)
        taken = ring | {d.name for d in self.friend_links}
        rest = [d for d in rest if d.name not in taken]
        k_sw = self.cfg.k_sw + self.cfg.k_f - len(self.friend_links)
        spacing = cw(self.id, self.succs[-1].id, m) / len(self.succs) if self.succs else 1.0
        self.sw_links = small_world(self.desc, rest, self.sw_targets[:k_sw], m, spacing)

    def _utility(self, d: Desc) -> float:
        if d.name not in self._utils:
            self._utils[d.name] = utility_on(self.desc, self.primary)(d)
        return self._utils[d.name]

    def _primary(self, pool: list[Desc]) -> str | None:
        """Algorithm 1, sticky: the primary attribute changes only for a strictly better rank."""
        sub = self.sub
        assert sub is not None
        rank = dict.fromkeys(sub.attrs, 0)
        for d in pool:
            if d.name not in self._overlaps:
                self._overlaps[d.name] = overlapping_attrs(sub, d.sub)
            for a in self._overlaps[d.name]:
                rank[a] += 1
        best = most_overlapped(rank, self.cfg.attrs)
        if best is None or self.primary is None or rank[best] > rank.get(self.primary, -1):
            if best != self.primary:
                self._utils.clear()
            return best
        return self.primary

    # --- the state machine ---
    def tick(self, now: int) -> list[Msg]:
        """One gossip round: expire the CRT, shuffle, exchange with a partner, refresh the
        subscription every ``refresh`` rounds, tell the predecessor our load."""
        self.crt.expire(now)
        out: list[Msg] = []
        started = self.cyclon.start(self.desc, self.rng)
        if started is not None:
            self._sent[started[0]] = started[1]
            out.append(Shuffle(self.name, started[0], started[1]))
        partner = self._partner()
        if partner is not None:
            out.append(Gossip(self.name, partner, self._offer()))
        if now % self.cfg.refresh == self.name % self.cfg.refresh:
            out += self.subscribe(now)
        pred = self.pred
        if pred is not None and self.cfg.beta is not None:
            pts = sorted(self.rv_points)
            out.append(Load(self.name, pred.name, self.load, pts[len(pts) // 2] if pts else None))
        return out

    def receive(self, msg: Msg, now: int) -> list[Msg]:
        if isinstance(msg, Shuffle):
            return self._on_shuffle(msg)
        if isinstance(msg, Gossip):
            self.learn(msg.descs)
            return [] if msg.reply else [Gossip(self.name, msg.src, self._offer(), reply=True)]
        if isinstance(msg, Lookup):
            return self._lookup(msg, now)
        if isinstance(msg, EventMsg):
            return self._event(msg, now)
        if isinstance(msg, Load):
            return self._on_load(msg, now)
        return self._on_moved(msg)

    def publish(self, eid: int, event: Event, now: int) -> list[Msg]:
        """Send one copy of the event towards the RV of each attribute's point."""
        out: list[Msg] = []
        for attr, value in event:
            if attr in self.cfg.attrs:
                point = self.event_point(attr, value)
                out += self._event(EventMsg(self.name, self.name, eid, attr, point, event, ROUTE, 0), now)
        return out

    def subscribe(self, now: int) -> list[Msg]:
        """(Re-)install our subscription along the installation path for its attribute."""
        attr = self.install_attr()
        if attr is None or self.sub is None:
            return []
        own = Lookup(self.name, self.name, self.name, attr, self.lookup_iv(attr), self.sub)
        return self._lookup(own, now)

    def unreachable(self, name: int, failed: Msg | None = None) -> list[Msg]:
        """A message to ``name`` failed: forget it everywhere (its CRT rows included), re-rank, and
        send a lookup or an event still on its way to the RV again by the next best link."""
        self.dead.add(name)
        keep = [d for d in (*self.succs, *self.preds) if d.name != name]
        self.succs, self.preds = [], []
        self.friend_links = [d for d in self.friend_links if d.name != name]
        self.sw_links = [d for d in self.sw_links if d.name != name]
        self.cyclon.drop(name)
        self.crt.drop_neighbour(name)
        self.learn(keep)
        if isinstance(failed, Lookup):
            pieces = self._route_range(failed.iv)
            return [replace(failed, dst=d.name, iv=iv, known_id=d.id) for d, iv in pieces]
        if isinstance(failed, EventMsg) and failed.phase == ROUTE:
            nxt = self.next_hop(failed.point)
            return [replace(failed, dst=nxt.name, known_id=nxt.id)] if nxt is not None else []
        return []

    def _partner(self) -> int | None:
        """Round-robin over successor, predecessor (the ring heartbeat) and a random link."""
        self._turn += 1
        links = self.links()
        choice = [self.succ, self.pred, self.rng.choice(links) if links else None][self._turn % 3]
        if choice is None and links:
            choice = links[0]
        return choice.name if choice is not None else None

    def _offer(self) -> tuple[Desc, ...]:
        mine = freshest([*self.succs, *self.preds, *self.links(), *self.cyclon.descs()], self.name)
        return (self.desc, *mine.values())

    def _on_shuffle(self, msg: Shuffle) -> list[Msg]:
        got = [d for d in msg.descs if d.name not in self.dead]
        if msg.reply:
            self.cyclon.merge(self.name, got, self._sent.pop(msg.src, ()))
            self.learn(got)
            return []
        sent = self.cyclon.answer(self.name, got, self.rng)
        self.learn(got)
        return [Shuffle(self.name, msg.src, sent, reply=True)]

    def _lookup(self, msg: Lookup, now: int) -> list[Msg]:
        """Algorithm 2: register the requester, keep our own part, split the rest at the links inside
        it, or go greedily towards its beginning."""
        if msg.src != self.name:
            self.crt.install(msg.src, msg.attr, msg.owner, msg.iv, msg.sub, now + self.cfg.crt_ttl)
        if msg.hops >= self.cfg.max_hops:
            return []
        out: list[Msg] = self._correct(msg.src, msg.known_id)
        for piece in subtract(msg.iv, self.own()):
            for d, iv in self._route_range(piece):
                out.append(Lookup(self.name, d.name, msg.owner, msg.attr, iv, msg.sub, msg.hops + 1, d.id))
        return out

    def _route_range(self, piece: Interval) -> list[tuple[Desc, Interval]]:
        inside = sorted((d for d in self.links() if contains(piece, d.id)), key=lambda d: d.id)
        if inside:
            by_id = {d.id: d for d in inside}
            return [(by_id[t], iv) for t, iv in split_at(piece, list(by_id))]
        nxt = self.next_hop(piece[0])
        return [(nxt, piece)] if nxt is not None else []

    def next_hop(self, point: int) -> Desc | None:
        """Greedy: the successor if the point is in (self, succ], else the link closest before it."""
        succ, m = self.succ, self.cfg.id_space
        if succ is None:
            return None
        if in_any(owned(self.id, succ.id, m), point):
            return succ
        best = min(self.links(), key=lambda d: (cw(d.id, point, m), d.name))
        return best if cw(best.id, point, m) < cw(self.id, point, m) else succ

    def _event(self, msg: EventMsg, now: int) -> list[Msg]:
        if msg.phase == TREE:
            return self._tree(msg, msg.src)
        if in_any(self.own(), msg.point):
            if self.sub is None or not self.sub.matches(msg.event):
                self.load += 1
                self.rv_points = [*self.rv_points[-RV_MEMORY + 1 :], msg.point]
            out = self._tree(replace(msg, phase=TREE, at_rv=msg.hops), None)
            ho = self.handover
            if ho is not None and now <= ho[2] and in_any(ho[0], msg.point):
                out.append(replace(msg, src=self.name, dst=ho[1], phase=TREE, hops=msg.hops + 1))
            return out
        nxt = self.next_hop(msg.point)
        if nxt is None or msg.hops >= self.cfg.max_hops:
            return []
        fwd = replace(msg, src=self.name, dst=nxt.name, hops=msg.hops + 1, known_id=nxt.id)
        return [*self._correct(msg.src, msg.known_id), fwd]

    def _correct(self, src: int, known_id: int) -> list[Msg]:
        """A sender that routed by a stale id of ours (we moved and it does not link to us, so it
        was not told) learns the new one before its next message can loop."""
        if known_id in (-1, self.id) or src == self.name:
            return []
        return [Moved(self.name, src, self.desc)]

    def _tree(self, msg: EventMsg, came_from: int | None) -> list[Msg]:
        """Deliver once if our subscription matches, forward down every matching CRT row."""
        key = (msg.eid, msg.attr)
        if key in self.seen:
            self.duplicates += 1
            return []
        self.seen.add(key)
        if self.sub is not None and self.sub.matches(msg.event) and msg.eid not in self.delivered:
            self.delivered[msg.eid] = msg.hops
            self.deliveries.append((msg.eid, msg.hops, msg.hops - msg.at_rv))
        exclude = -1 if came_from is None else came_from
        nbrs = self.crt.targets(msg.attr, msg.point, msg.event, exclude)
        return [replace(msg, src=self.name, dst=n, phase=TREE, hops=msg.hops + 1) for n in nbrs]

    def _on_load(self, msg: Load, now: int) -> list[Msg]:
        """Load balancing: if our successor carries more than β over us, move our id to the median of
        its RV points (halving its load) and both take the average load."""
        succ, beta, m = self.succ, self.cfg.beta, self.cfg.id_space
        if succ is None or beta is None or succ.name != msg.src or msg.median is None:
            return []
        if msg.load - self.load <= beta or not 0 < cw(self.id, msg.median, m) < cw(self.id, succ.id, m):
            return []
        avg = (self.load + msg.load) // 2
        self.handover = (owned(self.id, msg.median, m), succ.name, now + self.cfg.crt_ttl)
        self.id, self.ver, self.load, self.rv_points = msg.median, self.ver + 1, avg, []
        out: list[Msg] = [Moved(self.name, succ.name, self.desc, load=avg)]
        return out + [Moved(self.name, d.name, self.desc) for d in self.links() if d.name != succ.name]

    def _on_moved(self, msg: Moved) -> list[Msg]:
        if msg.load is not None:
            self.load = msg.load
        self.learn([msg.desc])
        self.rv_points = [p for p in self.rv_points if in_any(self.own(), p)]
        return []
