"""The covering family: ``rpf`` plus the covering optimisation (active, lazy) and subscription packing.

All three run on an acyclic overlay. Every broker stores every subscription it
receives as ``{filter, last hop}`` exactly as in :mod:`~scotbed.routing.rpf`,
and notifications are routed exactly as there (matched against the full table,
one copy per distinct matching last hop other than the sender). What changes is
which subscriptions travel: per neighbour ``n`` a broker keeps

- ``fwd[n]``: the subscriptions it has forwarded to ``n`` and not withdrawn;
- ``held[n]``: the *candidates* for ``n`` (stored subscriptions whose last hop
  is not ``n``) that it held back, each under the forwarded subscription that
  covers it.

Invariant: every candidate for ``n`` is in ``fwd[n]`` or covered (``Filter.covers``:
every notification matching it matches the coverer) by the member of ``fwd[n]``
it is held under. So each subscriber's interest is represented on every link of
its reverse path, and delivery is exactly-once as with ``rpf``.

New subscription S (from hop h), for each neighbour n ≠ h:
  if a member of ``fwd[n]`` covers S, S is held back (not sent to n); otherwise S
  is sent to n. ``covering-lazy`` leaves in place the members of ``fwd[n]`` that S
  covers. ``covering-active`` (and ``-packing``), the paper's active form, then
  sends n one unsubscription for each member T of ``fwd[n]`` that S covers, after
  S, and holds T (and what T held) under S: n deletes T from its table, so the
  brokers that see both keep only S. n forwards such an unsubscription no further
  (n had already replaced T with S on its own links), so the clean-up costs one
  message per covered subscription per link.

Unsubscription of S: removed from the table; to each n with S in ``fwd[n]`` the
  broker sends the unsubscription, and the subscriptions S held for n become
  uncovered: the roots among those not covered by another member of ``fwd[n]``
  (not covered by another released one; first come wins between equal filters)
  are sent to n; the others are held under a root. ``covering-active`` and
  ``covering-lazy`` send each released root as its own subscription message,
  *before* the unsubscription on the same link (links are FIFO, so n never has a
  moment with neither S nor its replacements: no notification is lost);
  ``covering-packing`` sends them inside the one unsubscription
  (``Unsubscription.packed``). A receiver processes packed subscriptions first,
  exactly as if they had arrived separately, then the removal; so what it must
  release in turn is computed over its own held-back subscriptions and the
  unpacked ones together and again leaves in one message per link. When a
  packing broker must send several subscriptions on one link without an
  unsubscription, they travel as one ``Subscription`` carrying the rest in
  ``packed``. Clean-up unsubscriptions of the active form are not packed (the
  message model packs subscriptions only).

Costs: lazy never sends a subscription twice over a link and sends an
unsubscription only where the subscription went, so it never sends more
messages than ``rpf``. The active form does not have that bound: a subscription
withdrawn by clean-up is sent again when its coverer leaves (the burst the
selective-pruning paper is about).
"""

from __future__ import annotations

from typing import ClassVar

from scotbed.filters import Filter
from scotbed.messages import Message, Subscription, Unsubscription, copy_with
from scotbed.routing.base import LOCAL, BrokerView, Decision, Entry, Forward
from scotbed.routing.rpf import ReversePathForwarding


class _Out:
    """Messages of one decision per next hop: subscriptions, then the removal, then clean-ups."""

    def __init__(self) -> None:
        self.subs: dict[str, list[Subscription]] = {}
        self.primary: dict[str, Unsubscription] = {}
        self.unsubs: dict[str, list[Unsubscription]] = {}

    def sub(self, hop: str, msg: Subscription) -> None:
        self.subs.setdefault(hop, []).append(msg)

    def removal(self, hop: str, msg: Unsubscription) -> None:
        self.subs.setdefault(hop, [])
        self.primary[hop] = msg

    def cleanup(self, hop: str, msg: Unsubscription) -> None:
        self.subs.setdefault(hop, [])
        self.unsubs.setdefault(hop, []).append(msg)

    def forwards(self, packing: bool) -> list[Forward]:
        out: list[Forward] = []
        for hop, subs in self.subs.items():
            msgs: list[Message] = []
            primary = self.primary.get(hop)
            if packing and primary is not None:
                msgs.append(copy_with(primary, packed=tuple(subs)))
            else:
                if packing and subs:
                    msgs.append(copy_with(subs[0], packed=tuple(subs[1:])))
                else:
                    msgs.extend(subs)
                if primary is not None:
                    msgs.append(primary)
            msgs.extend(self.unsubs.get(hop, []))
            out.extend(Forward(hop, m) for m in msgs)
        return out


class _Covering(ReversePathForwarding):
    active: ClassVar[bool]
    packing: ClassVar[bool] = False

    def __init__(self, view: BrokerView) -> None:
        super().__init__(view)
        self.subs: dict[str, Subscription] = {}  # stored subscriptions as they are forwarded
        self.fwd: dict[str, dict[str, Filter]] = {n: {} for n in view.neighbours}
        self.held: dict[str, dict[str, dict[str, None]]] = {n: {} for n in view.neighbours}
        self.holder: dict[str, dict[str, str]] = {n: {} for n in view.neighbours}

    def covering_state(self) -> int:
        """Forwarded plus held-back records over all neighbours (0 when nothing is subscribed)."""
        return sum(len(self.fwd[n]) + len(self.holder[n]) for n in self.fwd)

    # --- messages ------------------------------------------------------------------------

    def on_subscription(self, sub: Subscription, from_hop: str | None) -> Decision:
        out = _Out()
        added = [self._add(s, from_hop, out) for s in (sub, *sub.packed)]
        return Decision(forwards=out.forwards(self.packing), stored=any(added), duplicate=not all(added))

    def on_unsubscription(self, unsub: Unsubscription, from_hop: str | None) -> Decision:
        out = _Out()
        added = [self._add(s, from_hop, out) for s in unsub.packed]
        entry = self.table.remove(unsub.sub_id)
        if entry is None:
            return Decision(
                forwards=out.forwards(self.packing), stored=any(added), duplicate=from_hop is not None
            )
        msg = copy_with(unsub, packed=(), filter=entry.filter)
        assert isinstance(msg, Unsubscription)
        for n in self.fwd:
            if unsub.sub_id in self.fwd[n]:
                removal = self._removal(n, msg)
                if removal is None:
                    continue
                del self.fwd[n][unsub.sub_id]
                out.removal(n, removal)
                self._release(n, list(self.held[n].pop(unsub.sub_id, {})), out)
            elif (coverer := self.holder[n].pop(unsub.sub_id, None)) is not None:
                del self.held[n][coverer][unsub.sub_id]
                if not self.held[n][coverer]:
                    del self.held[n][coverer]
        if not any(unsub.sub_id in f for f in self.fwd.values()):
            del self.subs[unsub.sub_id]
        return Decision(forwards=out.forwards(self.packing), stored=True)

    def _removal(self, n: str, msg: Unsubscription) -> Unsubscription | None:
        """What to send ``n``, which ``msg``'s subscription was forwarded to; None keeps it there."""
        return msg

    # --- covering ------------------------------------------------------------------------

    def _add(self, sub: Subscription, from_hop: str | None, out: _Out) -> bool:
        if sub.sub_id in self.table:
            return False
        last_hop = from_hop if from_hop is not None else LOCAL
        self.table.add(sub.sub_id, Entry(sub.sub_id, sub.filter, last_hop, sub.host_broker))
        stored = copy_with(sub, packed=())
        assert isinstance(stored, Subscription)
        self.subs[sub.sub_id] = stored
        for n in self.other_neighbours(from_hop):
            self._offer(n, sub.sub_id, out)
        return True

    def _hold(self, n: str, sub_id: str, coverer: str) -> None:
        self.held[n].setdefault(coverer, {})[sub_id] = None
        self.holder[n][sub_id] = coverer

    def _coverer(self, n: str, flt: Filter) -> str | None:
        return next((t for t, f in self.fwd[n].items() if f.covers(flt)), None)

    def _offer(self, n: str, sub_id: str, out: _Out) -> None:
        """Send candidate ``sub_id`` to ``n`` unless a subscription forwarded there covers it."""
        sub = self.subs[sub_id]
        coverer = self._coverer(n, sub.filter)
        if coverer is not None:
            self._hold(n, sub_id, coverer)
            return
        out.sub(n, sub)
        fwd = self.fwd[n]
        if self.active:
            for t in [t for t, f in fwd.items() if sub.filter.covers(f)]:
                del fwd[t]
                ts = self.subs[t]
                out.cleanup(n, Unsubscription(t, ts.host_broker, ts.cbv, ts.state, filter=ts.filter))
                for h in self.held[n].pop(t, {}):
                    self._hold(n, h, sub_id)
                self._hold(n, t, sub_id)
        fwd[sub_id] = sub.filter

    def _release(self, n: str, cands: list[str], out: _Out) -> None:
        """Re-place candidates whose coverer left ``fwd[n]``: roots first, in rounds."""
        for c in cands:
            del self.holder[n][c]
        while cands:
            rest: list[str] = []
            for c in cands:
                coverer = self._coverer(n, self.subs[c].filter)
                if coverer is not None:
                    self._hold(n, c, coverer)
                else:
                    rest.append(c)
            filters = [self.subs[c].filter for c in rest]
            roots = [
                c
                for i, c in enumerate(rest)
                if not any(
                    j != i and d.covers(filters[i]) and (j < i or not filters[i].covers(d))
                    for j, d in enumerate(filters)
                )
            ]
            roots = roots or rest[:1]  # only if syntactic covering were cyclic: still terminates
            for c in roots:
                self._offer(n, c, out)
            placed = set(roots)
            cands = [c for c in rest if c not in placed]


class ActiveCovering(_Covering):
    active = True


class LazyCovering(_Covering):
    active = False


class PackingCovering(_Covering):
    active = True
    packing = True
