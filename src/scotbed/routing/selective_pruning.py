"""Selective pruning of a removed subscription's tree (selective filter aggregation), on covering-active.

Routing, covering and the messages of subscriptions are exactly those of
:class:`~scotbed.routing.covering.ActiveCovering`; what changes is how far an
unsubscription travels (readings: "Selective pruning").

Publication header ``(distance, count)``, both 0 at the publisher host broker (PHB). At every
other broker, k = the matching routing-table entries whose last hop is not the hop the publication
came from (local entries count); k ≥ 2 → ``count += 1, distance = 0``, else ``distance += 1``.
So at a subscriber host broker (SHB) ``distance`` is how many hops back towards the PHB the
nearest broker is where another subscription also wanted the publication.

The SHB keeps, per local subscription S, a sliding window (``window_s``) of the headers of the
publications S matched, per PHB A. On S's unsubscription it derives the critical distance
D_A = the smallest d ≥ 0 such that at least a fraction θ (``similarity``) of A's window has
distance ≤ d, and sends the tuple list [(A, D_A)]. An empty window, a largest ``count`` below
``min_count``, or θ ≥ 1 (a window is a sample: it cannot show that the preserved tree would carry
no false positive) give a plain covering-active unsubscription (empty tuple list).

Algorithm 1 at every broker: S is removed from the table; for each neighbour n S was forwarded to,
newlist = [(A, d − 1) for (A, d) in tuples if toward[A] = n and d > 0]; non-empty → S is withdrawn
from n (the subscriptions it held for n are released, as covering-active does) and the
unsubscription goes on with newlist; empty → nothing is sent and S stays in ``fwd[n]`` as a
*ghost*: n and the brokers behind it keep S's tree, and S keeps holding what it covered for n.
``toward[A]`` is the neighbour publications of A arrived from (learnt from the traffic; on a tree
it is the next hop to A). A ghost lasts until a later unsubscription reaches it: a subscription
that covers it withdraws it from n by covering-active's clean-up. Ghosts are no routing-table
entries, so they add no delivery; the trees they keep only route publications towards brokers
that match them against their real entries, so delivery stays exactly-once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any, ClassVar

from scotbed.messages import Publication, Unsubscription, copy_with
from scotbed.routing.base import LOCAL, BrokerView, Decision
from scotbed.routing.covering import ActiveCovering

Tuples = tuple[tuple[str, int], ...]


def critical_distance(distances: Iterable[int], similarity: float) -> int:
    """The smallest d ≥ 0 such that at least a fraction ``similarity`` of ``distances`` is ≤ d."""
    ds = sorted(distances)
    need = similarity * len(ds) - 1e-9  # float slack: 0.7 * 10 must need 7, not 8
    return next((d for i, d in enumerate(ds) if i + 1 >= need), ds[-1])


def prune_tuples(window: Iterable[tuple[str, int, int]], similarity: float, min_count: int) -> Tuples:
    """The unsubscription's tuple list from an SHB window of ``(PHB, distance, count)``; () = full prune."""
    per_phb: dict[str, list[int]] = {}
    top = -1
    for phb, distance, count in window:
        per_phb.setdefault(phb, []).append(distance)
        top = max(top, count)
    if not per_phb or top < min_count or similarity >= 1.0:
        return ()
    return tuple((a, critical_distance(ds, similarity)) for a, ds in sorted(per_phb.items()))


def header_after(pub: Publication, k: int) -> tuple[int, int]:
    """``(distance, count)`` after a non-PHB broker where ``k`` entries (other than the sender's) matched."""
    return (0, pub.count + 1) if k >= 2 else (pub.distance + 1, pub.count)


class SelectivePruning(ActiveCovering):
    params: ClassVar[dict[str, Any]] = {"similarity": 0.9, "window_s": 60.0, "min_count": 1}

    def __init__(self, view: BrokerView) -> None:
        super().__init__(view)
        #: SHB history: local sub_id -> (time, PHB, distance, count) of the publications it matched
        self.history: dict[str, deque[tuple[float, str, int, int]]] = {}
        self.toward: dict[str, str] = {}  # PHB -> the neighbour its publications arrive from

    def on_publication(self, pub: Publication, from_hop: str | None) -> Decision:
        matched, us = self.table.match(pub.attrs)
        if from_hop is not None:
            self.toward[pub.source_broker] = from_hop
            k = sum(1 for e in matched if e.last_hop != from_hop)
            distance, count = header_after(pub, k)
            pub = copy_with(pub, distance=distance, count=count)
        hops = {e.last_hop for e in matched if e.last_hop != LOCAL and e.last_hop != from_hop}
        deliver = self.local_deliveries(matched)
        self._record(pub, deliver)
        return Decision(
            forwards=self.copies(pub, sorted(hops)), deliver=deliver, match_us=us, matched=len(matched)
        )

    def on_unsubscription(self, unsub: Unsubscription, from_hop: str | None) -> Decision:
        if from_hop is None:
            window = self._window(unsub.sub_id)
            self.history.pop(unsub.sub_id, None)
            tuples = prune_tuples(window, self.param("similarity"), self.param("min_count"))
            unsub = copy_with(unsub, prune=tuples)
        return super().on_unsubscription(unsub, from_hop)

    def _removal(self, n: str, msg: Unsubscription) -> Unsubscription | None:
        if not msg.prune:
            return msg
        newlist = tuple((a, d - 1) for a, d in msg.prune if self.toward.get(a) == n and d > 0)
        if not newlist:
            return None  # S stays forwarded to n: a ghost
        out = copy_with(msg, prune=newlist)
        assert isinstance(out, Unsubscription)
        return out

    def _hold(self, n: str, sub_id: str, coverer: str) -> None:
        """A ghost covered by a new subscription is withdrawn from ``n`` for good, not held."""
        if sub_id in self.table:
            super()._hold(n, sub_id, coverer)
        elif not any(sub_id in f for f in self.fwd.values()):
            del self.subs[sub_id]

    # --- the SHB's publication history ---------------------------------------------------------

    def _record(self, pub: Publication, local: list[str]) -> None:
        if not local:
            return
        now = self.view.clock()
        for sub_id in local:
            self.history.setdefault(sub_id, deque()).append((now, pub.source_broker, pub.distance, pub.count))
            self._expire(sub_id, now)

    def _expire(self, sub_id: str, now: float) -> None:
        window = self.history[sub_id]
        horizon = now - float(self.param("window_s"))
        while window and window[0][0] < horizon:
            window.popleft()

    def _window(self, sub_id: str) -> list[tuple[str, int, int]]:
        if sub_id not in self.history:
            return []
        self._expire(sub_id, self.view.clock())
        return [(a, d, c) for _, a, d, c in self.history[sub_id]]

    def ghosts(self) -> int:
        """Subscriptions kept forwarded on a link after their removal here, over all links."""
        return sum(1 for f in self.fwd.values() for s in f if s not in self.table)
