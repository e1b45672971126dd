"""The peers' metrics (Vinifera, DESIGN §10) from their event logs: one
:class:`~scotbed.peers.metrics.EventRecord` per published event, then the paper's figures with the
definitions of :mod:`scotbed.peers.metrics` (one home), so processes and the simulator are measured
alike. The oracle (``interested``) is every peer whose logged subscription matches the event.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scotbed import contract
from scotbed.peers import codec
from scotbed.peers.interest import Subscription
from scotbed.peers.metrics import (
    EventRecord,
    hit_ratio,
    idle_share,
    load_cdf,
    loads,
    overhead,
    path_length,
    tree_depth,
)

#: the load values at which the summary reports the CDF (share of peers at or below)
CDF_POINTS = (0.0, 0.1, 0.2, 0.3, 0.6, 1.0)


def records(events: Iterable[dict[str, Any]]) -> tuple[list[EventRecord], set[int]]:
    """Per-event records and the peer names seen, from the peers' events (any order)."""
    events = list(events)
    subs: dict[int, Subscription] = {}
    names: set[int] = set()
    for e in events:
        if not str(e["node"]).startswith(contract.PEER_PREFIX):
            continue
        names.add(contract.peer_name(e["node"]))
        if e["ev"] == contract.SUBSCRIBE:
            sub = codec.sub_in(e["ranges"])
            if sub is not None:
                subs[contract.peer_name(e["node"])] = sub
    out: dict[int, EventRecord] = {}
    for e in events:
        if e["ev"] == contract.PUBLISH and str(e["node"]).startswith(contract.PEER_PREFIX):
            ev = codec.event_in(e["values"])
            interested = frozenset(n for n, s in subs.items() if s.matches(ev))
            out[e["pub_id"]] = EventRecord(e["pub_id"], contract.peer_name(e["node"]), e["round"], interested)
    for e in events:
        rec = out.get(e.get("pub_id", -1))
        if rec is None or not str(e["node"]).startswith(contract.PEER_PREFIX):
            continue
        name = contract.peer_name(e["node"])
        if e["ev"] == contract.EV_IN:
            rec.received[name] = rec.received.get(name, 0) + 1
        elif e["ev"] == contract.DELIVER:
            if name in rec.deliveries:
                rec.extra_deliveries += 1
            else:
                rec.deliveries[name], rec.tree_hops[name] = e["hops"], e["tree_hops"]
    return [out[k] for k in sorted(out)], names


def summary(recs: list[EventRecord], names: Iterable[int]) -> dict[str, Any]:
    """The paper's figures: overhead, path length (and its tree part), hit ratio, load CDF, idle share."""
    per_peer = list(loads(recs, names).values())
    return {
        "events": len(recs),
        "hit_ratio": hit_ratio(recs),
        "missed": sum(len(r.interested - r.deliveries.keys()) for r in recs),
        "extra_deliveries": sum(r.extra_deliveries for r in recs),
        "overhead": overhead(recs),
        "path_length": path_length(recs),
        "tree_depth": tree_depth(recs),
        "idle_share": idle_share(per_peer),
        "max_load": max(per_peer, default=0.0),
        "load_cdf": dict(zip(CDF_POINTS, load_cdf(per_peer, CDF_POINTS), strict=True)),
    }
