"""The peers' metrics (Vinifera, DESIGN §10) from their event logs: one
:class:`~scotbed.peers.metrics.EventRecord` per published event, then the paper's figures with the
definitions of :mod:`scotbed.peers.metrics` (one home), so processes and the simulator are measured
alike. The oracle (``interested``) is every peer whose logged subscription matches the event.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

from scotbed import contract
from scotbed.peers import codec
from scotbed.peers.interest import Subscription
from scotbed.peers.metrics import (
    EventRecord,
    hit_ratio,
    hit_ratio_by_round,
    idle_share,
    load_cdf,
    loads,
    overhead,
    path_length,
    tree_depth,
)

#: the load values at which the summary reports the CDF (share of peers at or below)
CDF_POINTS = (0.0, 0.1, 0.2, 0.3, 0.6, 1.0)


def records(
    events: Iterable[dict[str, Any]], failed: Mapping[int, int] | None = None
) -> tuple[list[EventRecord], set[int]]:
    """Per-event records and the peer names seen, from the peers' events (any order); a peer in
    ``failed`` (name -> round of its failure) is not interested in events from that round on."""
    failed = failed or {}
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
            alive = {n: s for n, s in subs.items() if failed.get(n, e["round"] + 1) > e["round"]}
            interested = frozenset(n for n, s in alive.items() if s.matches(ev))
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
        "hit_ratio_by_round": hit_ratio_by_round(recs),
        "missed": sum(len(r.interested - r.deliveries.keys()) for r in recs),
        "extra_deliveries": sum(r.extra_deliveries for r in recs),
        "overhead": overhead(recs),
        "path_length": path_length(recs),
        "tree_depth": tree_depth(recs),
        "idle_share": idle_share(per_peer),
        "max_load": max(per_peer, default=0.0),
        "load_cdf": dict(zip(CDF_POINTS, load_cdf(per_peer, CDF_POINTS), strict=True)),
    }


def verdict(s: Mapping[str, Any], churn: bool) -> tuple[bool, str]:
    """Stable runs: every interested peer got every event exactly once. Under churn the hit ratio
    is a measurement, duplicates are still wrong."""
    if s["extra_deliveries"]:
        return False, f"INCORRECT: {s['extra_deliveries']} duplicate deliveries"
    if not churn and s["missed"]:
        return False, f"INCORRECT: {s['missed']} deliveries missed (hit ratio {s['hit_ratio']:.3f})"
    return True, f"OK: {s['events']} events, hit ratio {s['hit_ratio']:.3f}, no duplicates"


def correctness(s: Mapping[str, Any], churn: bool) -> dict[str, Any]:
    """The summary's ``correctness`` section as broker runs have it (``ok`` is what a campaign and
    ``scotbed reproduce`` read), from the peers' oracle."""
    return {"ok": verdict(s, churn)[0], "missing": s["missed"], "duplicates": s["extra_deliveries"]}


def report_html(name: str, routing: str, s: Mapping[str, Any]) -> str:
    """A self-contained page with the peers' figures (the summary's ``peers`` section)."""
    rows = [
        ("events", s["events"]),
        ("hit ratio", f"{s['hit_ratio']:.3f}"),
        ("missed / duplicate deliveries", f"{s['missed']} / {s['extra_deliveries']}"),
        ("overhead (share of event messages at uninterested peers)", f"{s['overhead']:.3f}"),
        ("path length, hops (delivery-tree part)", f"{s['path_length']:.2f} ({s['tree_depth']:.2f})"),
        ("idle peers", f"{s['idle_share']:.1%}"),
        ("maximum load", f"{s['max_load']:.3f}"),
        *((f"peers with load ≤ {p}", f"{v:.1%}") for p, v in s["load_cdf"].items()),
    ]
    body = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    title = html.escape(f"{name}: {routing}")
    return f"<!doctype html><meta charset=utf-8><title>{title}</title><h1>{title}</h1><table>{body}</table>\n"
