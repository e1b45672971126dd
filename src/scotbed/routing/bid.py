"""BID routing on any connected overlay (unclustered SCOT or any cyclic graph).

Subscriptions. A subscription carries its host broker id (BID) and is flooded:
a broker stores the first copy of (sub_id, host BID) with its last hop and
forwards it to every other neighbour; later copies are duplicates, dropped
(each is still a received inter-broker message). The host sends deg(host)
copies and every other broker deg − 1, so one subscription costs
Σ deg − (n − 1) = 2e − n + 1 messages on n brokers and e links.
Unsubscriptions are flooded the same way and remove the entry everywhere. A
removed key leaves a tombstone with the subscription's ``origin_ns``, so a
late copy of the subscription still travelling on a longer cycle is
recognised as a duplicate instead of resurrecting it; a new subscription
reusing the id has a later ``origin_ns`` and is accepted.

Notifications. Only the publisher's host broker matches against the whole
table; it delivers to its local matching subscribers and writes the BIDs of
the other matching subscriptions' hosts into the notification. Every broker
then splits the BID list per next hop; a broker whose BID is in the list
matches against its *local* subscriptions only and delivers. Intermediate
brokers do not match.

Next hop toward a host BID b. Different subscriptions of b may take
different first routes to a broker, so "the last hop of any stored
subscription of b" would be ambiguous. Instead each broker fixes, per host
BID, the last hop of the *first* subscription from b it ever stored, and
keeps it (at most one entry per broker in the overlay). This is loop-free and
exactly-once: let t(X) be the time the first subscription from b reached X;
X's next hop Y forwarded that copy to X, so Y had a subscription from b
earlier and t(Y) < t(X). Following next hops strictly decreases t, so the path
ends at b (t(b) is the minimum) without revisiting a broker, and each BID is
put in exactly one copy at each split. Every broker on the path has a route
for b by the same argument (Y stored a subscription from b before X did).
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict

from scotbed.messages import copy_with
from scotbed.routing.base import (
    LOCAL,
    BrokerView,
    Decision,
    Entry,
    Forward,
    Publication,
    RoutingAlgorithm,
    RoutingTable,
    Subscription,
    Unsubscription,
    steps_of,
)

TOMBSTONE_CAPACITY = 1_000_000  # removed (sub_id, host BID) keys remembered against late copies

Key = tuple[str, str]  # (sub_id, host BID)


class BidRouting(RoutingAlgorithm):
    params = {"tombstone_capacity": TOMBSTONE_CAPACITY}

    def __init__(self, view: BrokerView) -> None:
        super().__init__(view)
        self.local = RoutingTable(view.make_matcher())  # this broker's own subscribers
        self.route: dict[str, str] = {}  # host BID -> next hop, fixed by the first subscription from it
        self._origin: dict[Key, int] = {}
        self._tombstones: OrderedDict[Key, int] = OrderedDict()
        self._capacity = int(self.param("tombstone_capacity"))

    def on_subscription(self, sub: Subscription, from_hop: str | None) -> Decision:
        key = (sub.sub_id, sub.host_broker)
        if key in self.table:
            return Decision(duplicate=True)
        removed = self._tombstones.get(key)
        if removed is not None and sub.origin_ns <= removed:
            return Decision(duplicate=True)
        last_hop = from_hop if from_hop is not None else LOCAL
        entry = Entry(sub.sub_id, sub.filter, last_hop, sub.host_broker)
        self.table.add(key, entry)
        self._origin[key] = sub.origin_ns
        if from_hop is None:
            self.local.add(key, entry)
        elif sub.host_broker not in self.route:
            self.route[sub.host_broker] = from_hop
        return Decision(forwards=self.copies(sub, self.other_neighbours(from_hop)), stored=True)

    def on_unsubscription(self, unsub: Unsubscription, from_hop: str | None) -> Decision:
        key = (unsub.sub_id, unsub.host_broker)
        if self.table.remove(key) is None:
            return Decision(duplicate=from_hop is not None)
        self.local.remove(key)
        self._tombstones[key] = self._origin.pop(key, 0)
        if len(self._tombstones) > self._capacity:
            self._tombstones.popitem(last=False)
        return Decision(forwards=self.copies(unsub, self.other_neighbours(from_hop)), stored=True)

    def on_publication(self, pub: Publication, from_hop: str | None) -> Decision:
        me = self.view.id
        if from_hop is None:
            matched, us = self.table.match(pub.attrs)
            deliver = self.local_deliveries(matched)
            targets = {e.host_broker for e in matched} - {me}
            n_matched: int | None = len(matched)
            steps = steps_of(self.table)
        elif me in pub.bids:
            local, us = self.local.match(pub.attrs)
            deliver = [e.sub_id for e in local]
            targets = set(pub.bids) - {me}
            n_matched = len(local)
            steps = steps_of(self.local)
        else:
            us, deliver, targets, n_matched, steps = None, [], set(pub.bids), None, None
        split: defaultdict[str, list[str]] = defaultdict(list)
        for b in sorted(targets):
            hop = self.route.get(b)
            if hop is not None and hop != from_hop:
                split[hop].append(b)
        forwards = [Forward(hop, copy_with(pub, bids=tuple(bids))) for hop, bids in sorted(split.items())]
        return Decision(forwards=forwards, deliver=deliver, match_us=us, matched=n_matched, steps=steps)
