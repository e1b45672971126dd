"""Gryphon link matching (Banavar et al., ICDCS 1999) on a tree or a SCOT.

Every broker keeps every subscription in a PST annotated with trit vectors over its links plus LOCAL
(:class:`scotbed.matching.trits.TritPst`). A notification is searched once per broker, starting from the
initialisation mask of its publisher host broker (PHB), only until every link is decided; it goes out on
the Yes links, and the local subscribers are matched only when LOCAL is Yes.

Spanning trees. Subscriptions and notifications travel on each origin broker's shortest-path spanning tree
with one deterministic tie-break, the same at every broker: *change cluster at the origin's region*. On a
SCOT (a tree G_A times K_m) a shortest path from (p, i) to (u, j) takes at most one iCOL hop; the rule puts
it first, so the origin sends on every link, a broker reached over an iCOL sends on all its aCOLs, and any
other broker sends on its aCOLs except the arrival one. Every broker can apply this knowing only its own
links, and on a tree (m = 1) it is plain reverse-path forwarding.

- A subscription floods its host's spanning tree (n - 1 messages). Its link at a broker in another
  cluster than the host's is the iCOL into the host's cluster (the only way the PHB reaches it), else
  the arrival hop (LOCAL at the host).
- Initialisation mask (one per PHB, computed locally): Maybe on LOCAL and on the aCOLs except the arrival
  hop; on the iCOLs only at the PHB itself. Everything else is No.

Because every link a Yes can name is a child of this broker in the PHB's spanning tree, and every path in
it is the tie-broken shortest one, each matching subscriber gets each notification exactly once.
``steps`` on the ``match`` event is the number of PST nodes the search visited.
"""

from __future__ import annotations

import time

from scotbed.matching.trits import TritPst
from scotbed.routing.base import (
    LOCAL,
    BrokerView,
    Decision,
    Entry,
    Publication,
    RoutingAlgorithm,
    Subscription,
    Unsubscription,
)


def cluster_of(broker_id: str) -> int:
    """The K_m index of a broker id ``b-<vertex>-<index>`` (:func:`scotbed.topology.broker_id`)."""
    return int(broker_id.rsplit("-", 1)[1])


class LinkMatching(RoutingAlgorithm):
    requires_acyclic = False  # a tree or a SCOT: the spanning-tree tie-break handles the iCOLs
    requires_clusters = False  # on a tree (m = 1) it is reverse-path forwarding with link matching

    def __init__(self, view: BrokerView) -> None:
        super().__init__(view)  # self.table: the local subscriptions, matched only when LOCAL is Yes
        self.links = [LOCAL, *sorted(view.neighbours)]
        self.bit = {link: 1 << i for i, link in enumerate(self.links)}
        acol_bits = sum(self.bit[n] for n in self.acols)
        # per arrival hop (None: a local client), fixed at build: spanning-tree children, initialisation mask
        self._children: dict[str | None, list[str]] = {None: self.links[1:]}
        self._mask: dict[str | None, int] = {None: (1 << len(self.links)) - 1}
        for n in view.neighbours:
            self._children[n] = [a for a in self.acols if a != n]
            self._mask[n] = (acol_bits | self.bit[LOCAL]) & ~self.bit[n]
        self.pst = TritPst()
        self.remote: dict[str, Entry] = {}

    def _link_of(self, sub: Subscription, from_hop: str | None) -> str:
        if from_hop is None:
            return LOCAL
        host_cluster = cluster_of(sub.host_broker)
        if host_cluster != self.view.cluster:
            return self.icol_to[host_cluster]
        return from_hop

    def initialisation_mask(self, from_hop: str | None) -> int:
        return self._mask[from_hop]

    def on_subscription(self, sub: Subscription, from_hop: str | None) -> Decision:
        if sub.sub_id in self.remote or sub.sub_id in self.table:
            return Decision(duplicate=True)
        link = self._link_of(sub, from_hop)
        entry = Entry(sub.sub_id, sub.filter, link, sub.host_broker)
        if link == LOCAL:
            self.table.add(sub.sub_id, entry)
        else:
            self.remote[sub.sub_id] = entry
        self.pst.add_link_filter(sub.sub_id, sub.filter, self.bit[link])
        return Decision(forwards=self.copies(sub, self._children[from_hop]), stored=True)

    def on_unsubscription(self, unsub: Unsubscription, from_hop: str | None) -> Decision:
        found = self.remote.pop(unsub.sub_id, None) or self.table.remove(unsub.sub_id)
        if found is None:
            return Decision(duplicate=from_hop is not None)
        self.pst.remove(unsub.sub_id)
        return Decision(forwards=self.copies(unsub, self._children[from_hop]), stored=True)

    def on_publication(self, pub: Publication, from_hop: str | None) -> Decision:
        t0 = time.perf_counter_ns()
        yes = self.pst.links(pub.attrs, self._mask[from_hop])
        steps = self.pst.last_steps
        deliver: list[str] = []
        if yes & 1:
            matched, _ = self.table.match(pub.attrs)
            deliver = [e.sub_id for e in matched]
        us = (time.perf_counter_ns() - t0) / 1000.0
        forwards = self.copies(pub, [link for i, link in enumerate(self.links) if i and yes >> i & 1])
        return Decision(forwards=forwards, deliver=deliver, match_us=us, matched=len(deliver), steps=steps)

    def table_size(self) -> int:
        return len(self.table) + len(self.remote)

    def entries(self) -> list[Entry]:
        return [*self.table.values(), *self.remote.values()]
