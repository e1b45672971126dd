"""Reverse-path forwarding on an acyclic overlay (SIENA/PADRES subscription flooding, no covering).

A subscription is flooded over the tree: every broker stores
``{filter, last hop}`` (last hop "" at the host broker) and forwards it to
every other neighbour, so one subscription costs n − 1 inter-broker messages
on a tree of n brokers. An unsubscription travels the same way and removes
the entry everywhere. A notification is matched at every broker it reaches;
the broker delivers to its local matching subscribers and forwards one copy
to each distinct last hop of the matching entries, except the neighbour it
came from. On a tree the reverse paths are unique, so every matching
subscriber gets the notification exactly once.
"""

from __future__ import annotations

from scotbed.routing.base import (
    LOCAL,
    Decision,
    Entry,
    Publication,
    RoutingAlgorithm,
    Subscription,
    Unsubscription,
)


class ReversePathForwarding(RoutingAlgorithm):
    requires_acyclic = True
    dynamic_links = True  # an entry's last hop is the neighbour toward its host broker: re-pointable

    def on_subscription(self, sub: Subscription, from_hop: str | None) -> Decision:
        if sub.sub_id in self.table:
            return Decision(duplicate=True)  # impossible on a tree; kept as a guard against cycles
        last_hop = from_hop if from_hop is not None else LOCAL
        self.table.add(sub.sub_id, Entry(sub.sub_id, sub.filter, last_hop, sub.host_broker))
        return Decision(forwards=self.copies(sub, self.other_neighbours(from_hop)), stored=True)

    def on_unsubscription(self, unsub: Unsubscription, from_hop: str | None) -> Decision:
        if self.table.remove(unsub.sub_id) is None:
            return Decision(duplicate=from_hop is not None)
        return Decision(forwards=self.copies(unsub, self.other_neighbours(from_hop)), stored=True)

    def on_publication(self, pub: Publication, from_hop: str | None) -> Decision:
        matched, us = self.table.match(pub.attrs)
        hops = {e.last_hop for e in matched if e.last_hop != LOCAL and e.last_hop != from_hop}
        return Decision(
            forwards=self.copies(pub, sorted(hops)),
            deliver=self.local_deliveries(matched),
            match_us=us,
            matched=len(matched),
        )
