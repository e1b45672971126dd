"""Flooding: every notification reaches every broker; each delivers by local matching.

Subscriptions never leave their host broker. On a cyclic overlay a broker
recognises a notification it has already seen by its publication id and drops
the copy (a bounded memory of recent ids), so one notification costs
2e - n + 1 inter-broker messages on a connected overlay with n brokers and e
links, and n - 1 on a tree.
"""

from __future__ import annotations

from collections import OrderedDict

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

SEEN_CAPACITY = 1_000_000  # publication ids remembered for duplicate suppression


class Flooding(RoutingAlgorithm):
    params = {"seen_capacity": SEEN_CAPACITY}

    def __init__(self, view: BrokerView) -> None:
        super().__init__(view)
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._capacity = int(self.param("seen_capacity"))

    def on_subscription(self, sub: Subscription, from_hop: str | None) -> Decision:
        if from_hop is not None:
            return Decision()
        self.table.add(sub.sub_id, Entry(sub.sub_id, sub.filter, LOCAL, sub.host_broker))
        return Decision(stored=True)

    def on_unsubscription(self, unsub: Unsubscription, from_hop: str | None) -> Decision:
        removed = self.table.remove(unsub.sub_id) if from_hop is None else None
        return Decision(stored=removed is not None)

    def on_publication(self, pub: Publication, from_hop: str | None) -> Decision:
        if pub.pub_id in self._seen:
            return Decision(duplicate=True)
        self._seen[pub.pub_id] = None
        if len(self._seen) > self._capacity:
            self._seen.popitem(last=False)
        matched, us = self.table.match(pub.attrs)
        forwards = self.copies(pub, self.other_neighbours(from_hop))
        return Decision(forwards=forwards, deliver=self.local_deliveries(matched), match_us=us)
