"""OctopiS on a clustered SCOT: static (SNR) and dynamic (DNR) notification routing.

Subscription broadcast (SBP, Algorithm 1) runs in two steps and needs no ids:
the host broker of a subscriber sets its cluster's bit in the subscription's
cluster bit vector (CBV); the subscription floods the host cluster's tree over
aCOLs in state PRIMARY, and every broker of the host cluster sends it over each
of its iCOLs in state SECONDARY. A SECONDARY subscription is stored and goes no
further. One subscription costs (|V(G_A)| - 1) aCOL + |V(G_A)|·(m - 1) iCOL
messages; an unsubscription retraces the same two steps.

Every broker keeps two tables: PRIMARY entries (subscribers of its own
cluster, last hop = the aCOL toward the subscriber, or local) and SECONDARY
entries (subscribers of cluster j, last hop = the iCOL to B(a, j)).

SNR (Algorithm 3): the publisher's host broker matches both tables and sends
one copy per distinct next hop: over the target aCOLs of its PRIMARY entries
and over one target iCOL per target secondary cluster (TSC). Every other
broker matches only its PRIMARY entries and forwards over its own cluster's
target aCOLs, excluding the hop the copy came from. A copy entering cluster j
at any broker B(x, j) therefore reaches every interested broker of cluster j
by reverse-path forwarding on cluster j's tree, and exactly one copy enters
each TSC.

DNR (Algorithm 4) adds the link status table (LST) of the runtime: a target
iCOL whose output queue is overloaded gets no copy; its TSC is marked in a CBV
carried in the notification header, and one marked copy takes the place:

- Case I: some target iCOL is not overloaded: the marked copy is the one on
  the non-overloaded target iCOL with the least CE;
- Case II: all target iCOLs overloaded, some target aCOL not: the marked copy
  is the one on the non-overloaded target aCOL with the least CE;
- Case III: all target links overloaded: the marked copy goes on the least
  overloaded target iCOL (least CE, then shortest queue); its cluster is
  served by that copy, so its bit is cleared.

A broker that receives a marked copy treats the marked clusters as its target
iCOLs (it is in another region or cluster, but each of them is one iCOL away),
serves those it can reach over a non-overloaded iCOL, and places the
remaining bits by the same three cases; with no bit left the header is
dropped. Every bit is carried by exactly one copy and cleared when its cluster
is entered, so at most one copy enters each TSC and no broker receives a
notification twice: each directed link carries at most one copy of it.
Copies that carry a header or that serve a marked cluster are re-routed
copies (``dynamic=True``).
"""

from __future__ import annotations

from collections import Counter

from scotbed.messages import Publication, Subscription, SubState, Unsubscription, copy_with
from scotbed.routing.base import (
    LOCAL,
    BrokerView,
    Decision,
    Entry,
    Forward,
    RoutingAlgorithm,
    RoutingTable,
    steps_of,
)


def cbv_clusters(cbv: int | None) -> set[int]:
    """The cluster indexes whose bits are set in a CBV (bit i = cluster i)."""
    out: set[int] = set()
    i = 0
    v = cbv or 0
    while v:
        if v & 1:
            out.add(i)
        v >>= 1
        i += 1
    return out


def cbv_of(clusters: set[int]) -> int | None:
    """The CBV header for a set of clusters; None (no header) when the set is empty."""
    if not clusters:
        return None
    v = 0
    for i in clusters:
        v |= 1 << i
    return v


class StaticNotificationRouting(RoutingAlgorithm):
    """SNR: two-step subscription broadcast and routing on shortest subscription trees."""

    requires_clusters = True

    def __init__(self, view: BrokerView) -> None:
        super().__init__(view)
        self.secondary = RoutingTable(view.make_matcher())
        self._bit = 1 << view.cluster

    # --- subscription broadcast (Algorithm 1) -----------------------------------------------

    def on_subscription(self, sub: Subscription, from_hop: str | None) -> Decision:
        if from_hop is None:
            sub = copy_with(sub, cbv=self._bit, state=SubState.PRIMARY)
        last_hop = LOCAL if from_hop is None else from_hop
        entry = Entry(sub.sub_id, sub.filter, last_hop, sub.host_broker, sub.cbv, sub.state)
        if sub.state == SubState.SECONDARY:
            self.secondary.add(sub.sub_id, entry)
            return Decision(stored=True)
        self.table.add(sub.sub_id, entry)
        return Decision(forwards=self._two_steps(sub, from_hop), stored=True)

    def on_unsubscription(self, unsub: Unsubscription, from_hop: str | None) -> Decision:
        if from_hop is None:
            entry = self.table.get(unsub.sub_id)
            if entry is None or entry.last_hop != LOCAL:
                return Decision()  # not a subscription of this broker's clients
            unsub = copy_with(unsub, cbv=self._bit, state=SubState.PRIMARY)
        if unsub.state == SubState.SECONDARY:
            return Decision(stored=self.secondary.remove(unsub.sub_id) is not None)
        removed = self.table.remove(unsub.sub_id) is not None
        return Decision(forwards=self._two_steps(unsub, from_hop), stored=removed)

    def _two_steps(self, msg: Subscription | Unsubscription, from_hop: str | None) -> list[Forward]:
        """Primary step over the other aCOLs of the host cluster, secondary step over every iCOL."""
        primary = copy_with(msg, state=SubState.PRIMARY)
        secondary = copy_with(msg, state=SubState.SECONDARY)
        return [Forward(n, primary) for n in self.acols if n != from_hop] + [
            Forward(n, secondary) for n in self.icols
        ]

    # --- notification routing ----------------------------------------------------------------

    def on_publication(self, pub: Publication, from_hop: str | None) -> Decision:
        matched, us = self.table.match(pub.attrs)
        steps = steps_of(self.table)
        acols = sorted({e.last_hop for e in matched if e.last_hop not in (LOCAL, from_hop)})
        tscs: set[int] = set()
        if from_hop is None:  # the publisher's host broker also routes to the TSCs
            secondary, us2 = self.secondary.match(pub.attrs)
            us += us2
            steps = steps_of(self.table, self.secondary)
            tscs = {self.view.neighbours[e.last_hop].cluster for e in secondary}
        tscs |= cbv_clusters(pub.cbv)
        tscs.discard(self.view.cluster)
        forwards = self.route(pub, acols, tscs)
        return Decision(forwards=forwards, deliver=self.local_deliveries(matched), match_us=us, steps=steps)

    def route(self, pub: Publication, acols: list[str], tscs: set[int]) -> list[Forward]:
        """One plain copy per target aCOL and per TSC's iCOL."""
        plain = copy_with(pub, cbv=None, dynamic=False)
        return [Forward(n, plain) for n in sorted([*acols, *(self.icol_to[j] for j in tscs)])]

    def table_size(self) -> int:
        return len(self.table) + len(self.secondary)

    def entries(self) -> list[Entry]:
        return [*self.table.values(), *self.secondary.values()]


class DynamicNotificationRouting(StaticNotificationRouting):
    """DNR: SNR that avoids overloaded target iCOLs with a marked copy (cases I, II, III).

    ``cases`` counts, per case name, the notifications this broker re-routed.
    """

    def __init__(self, view: BrokerView) -> None:
        super().__init__(view)
        self.cases: Counter[str] = Counter()
        self.last_case: str | None = None

    def _load(self, hop: str) -> tuple[float, int, str]:
        s = self.view.link_state(hop)
        return (s.ce, s.queue_len, hop)

    def route(self, pub: Publication, acols: list[str], tscs: set[int]) -> list[Forward]:
        self.last_case = None
        marked_in = cbv_clusters(pub.cbv) - {self.view.cluster}
        served = {j for j in tscs if not self.view.link_state(self.icol_to[j]).overloaded}
        blocked = tscs - served
        plain = copy_with(pub, cbv=None, dynamic=False)
        relay = copy_with(pub, cbv=None, dynamic=True)  # serves a cluster marked upstream
        out: dict[str, Publication] = {n: plain for n in acols}
        for j in served:
            out[self.icol_to[j]] = relay if j in marked_in else plain
        if blocked:
            free_acols = [n for n in acols if not self.view.link_state(n).overloaded]
            if served:
                case = "I"
                hop = min((self.icol_to[j] for j in served), key=self._load)
            elif free_acols:
                case = "II"
                hop = min(free_acols, key=self._load)
            else:
                case = "III"
                hop = min((self.icol_to[j] for j in blocked), key=self._load)
                blocked = blocked - {self.view.neighbours[hop].cluster}
            header = cbv_of(blocked)
            rerouted = header is not None or self.view.neighbours[hop].cluster in marked_in
            out[hop] = copy_with(pub, cbv=header, dynamic=rerouted)
            self.cases[case] += 1
            self.last_case = case
        return [Forward(n, out[n]) for n in sorted(out)]
