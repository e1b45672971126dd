"""Dynamic links of a self-organising tree: open/close links at run time and swap tree versions.

Two ways to change the overlay (``Admin.Relink``):

- *now* (version 0): links open and close and routing entries are re-pointed at once. Correct only on
  a quiet overlay (nothing in flight); envelopes still queued on a closed link are dropped, counted.
- *versioned* (version v + 1): the END-wave swap of docs/self-organising.md for one swap at a time.
  Local publications are stamped with the adopted version; the new links open at once but routing
  keeps tree v until this broker has *finished* v: END(v) from every tree-v neighbour. A broker that
  adopted v + 1 sends END(v) to a tree-v neighbour once it has END(v) from all its others (leaves at
  once), so END(v) is the last v-notification on each FIFO link. A notification of a version whose
  predecessors are not finished here is *parked* and handled, in arrival order, at the finish; then
  the neighbour set changes, entries are re-pointed, and the removed link closes once its queue is
  acknowledged. Every broker handles all v-notifications before any (v + 1)-notification, each on
  one tree, so nothing is lost, duplicated or reordered per publisher.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scotbed.config import NeighbourConfig
from scotbed.contract import LINK_DOWN, LINK_UP
from scotbed.messages import Publication
from scotbed.topology import ACOL, ICOL
from scotbed.v1 import scotbed_pb2 as pb

if TYPE_CHECKING:
    from scotbed.broker.runtime import Broker, Item

END = "end"  # the control envelope kind of an END(v) marker; args {"version": v}


@dataclass(frozen=True, slots=True)
class End:
    """END(version) from a neighbour: no more notifications of that version on this link."""

    version: int


def end_of(control: pb.Control) -> End | None:
    """The END marker a control envelope carries, or None."""
    if control.kind != END:
        return None
    return End(int(control.args.get("version", "0")))


class TreeSwap:
    """The tree versions of one broker: adoption, the END wave, parking, and the link changes."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.version = 0  # the adopted tree version (local publications are stamped with it)
        self.finished = -1  # every version up to this one is finished here
        self.old: frozenset[str] = frozenset()  # tree-v neighbours while v is being finished
        self.got: dict[int, set[str]] = {}  # END(v) received, per version, from which neighbours
        self.sent: set[str] = set()
        self.pending: tuple[list[NeighbourConfig], list[str], Mapping[str, str]] = ([], [], {})
        self.parked: deque[Item] = deque()
        self._closing: set[asyncio.Task[None]] = set()
        self.opened = 0  # links opened at run time (each stream gets its own incarnation)

    # --- entry points -----------------------------------------------------------------------------

    def relink(
        self, up: list[NeighbourConfig], down: list[str], next_hop: Mapping[str, str], version: int = 0
    ) -> int:
        """Relink now (version 0) or adopt ``version``; returns entries re-pointed now."""
        b = self.broker
        if not b.algo.dynamic_links:
            raise ValueError(f"routing {b.cfg.routing!r} does not follow dynamic links")
        if version and (version != self.version + 1 or not self.ready()):
            raise ValueError(
                f"version {version}: this broker is at {self.version}, finished {self.finished},"
                f" {len(self._closing)} removed link(s) still flushing (one swap at a time)"
            )
        unknown = [n for n in down if n not in b.links]
        known = [n.id for n in up if n.id in b.links or n.id == b.id]
        bad = [
            n.id for n in up if n.kind not in (ACOL, ICOL) or n.type not in ("edge", "inner") or not n.address
        ]
        if unknown or known or bad:
            raise KeyError(
                f"not a neighbour: {unknown}; already a neighbour or this broker: {known}; malformed: {bad}"
            )
        for nc in up:
            self._open(nc)
        if not version:
            for n in down:
                self._close(n)
            return self._commit(up, down, next_hop)
        self.old = frozenset(b.view.neighbours)
        self.pending = (up, down, next_hop)
        self.version = version
        self._wave()
        return 0

    def admits(self, item: Item) -> bool:
        """Stamp a local message; park one whose earlier versions are not finished here. Subscriptions
        and unsubscriptions are versioned like notifications: each floods on one tree version."""
        from_hop, msg, _ = item
        if isinstance(msg, End):
            return True
        if from_hop is None:
            msg.tree_version = self.version
        if msg.tree_version <= self.finished + 1:
            return True
        self.parked.append(item)
        self.broker.counters["parked" if isinstance(msg, Publication) else "parked_routing"] += 1
        return False

    def on_end(self, from_hop: str, end: End) -> None:
        self.got.setdefault(end.version, set()).add(from_hop)
        self._wave()

    # --- the END wave -------------------------------------------------------------------------------

    def _wave(self) -> None:
        if self.version != self.finished + 2:  # no adopted version waits for its predecessor
            return
        v = self.version - 1
        got = self.got.setdefault(v, set())
        for n in sorted(self.old - self.sent):
            if self.old - {n} <= got:
                self._send_end(n, v)
        if self.old <= got:
            self._finish(v)

    def _send_end(self, n: str, v: int) -> None:
        env = pb.Envelope(control=pb.Control(kind=END, args={"version": str(v)}))
        link = self.broker.links[n]
        link.queue.append((env, env.ByteSize()))
        link.wake.set()
        self.broker.counters["end_out"] += 1
        self.sent.add(n)

    def _finish(self, v: int) -> None:
        self.finished = v
        up, down, next_hop = self.pending
        self.pending, self.sent, self.old = ([], [], {}), set(), frozenset()
        self.got.pop(v, None)
        self._commit(up, down, next_hop)
        for n in down:
            task = asyncio.get_running_loop().create_task(self._close_when_flushed(n))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        parked, self.parked = self.parked, deque()
        for item in parked:
            self.broker.handle(item)

    # --- links and routing --------------------------------------------------------------------------

    def _commit(self, up: list[NeighbourConfig], down: list[str], next_hop: Mapping[str, str]) -> int:
        """The plug-in's neighbour set and entries follow the new tree."""
        nbrs = self.broker.view.neighbours
        for n in down:
            nbrs.pop(n, None)
        for nc in up:
            nbrs[nc.id] = nc
        return self.broker.algo.on_relink(next_hop)

    def _open(self, nc: NeighbourConfig) -> None:
        b = self.broker
        link = b.links[nc.id] = b.link_out(nc)
        self.opened += 1
        if b.incarnation:
            b.start_sender(link, self.opened)
        b.events.emit(LINK_UP, link=nc.id)

    def _close(self, n: str) -> None:
        b = self.broker
        link = b.links.pop(n)
        task = b.senders.pop(n, None)
        if task is not None:
            task.cancel()
        lost = len(link.queue) + link.unacked_envelopes
        if lost:
            b.drop(n, "link_down", envelopes=lost)
        b.events.emit(LINK_DOWN, link=n, lost=lost)

    async def _close_when_flushed(self, n: str, poll_s: float = 0.005) -> None:
        link = self.broker.links[n]
        while link.queue or link.unacked:
            await asyncio.sleep(poll_s)
        self._close(n)

    def ready(self) -> bool:
        """May the next version be adopted: the one before finished, its removed link closed."""
        return self.finished == self.version - 1 and not self._closing

    def busy(self) -> bool:
        """Parked notifications or a removed link still flushing: not quiescent."""
        return bool(self.parked or self._closing)


def new_links(up: Any) -> list[NeighbourConfig]:
    """``NewLink`` messages as neighbour configs."""
    return [NeighbourConfig(n.neighbour, n.kind, n.type, n.cluster, n.region, n.address) for n in up]
