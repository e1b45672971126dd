"""The peers' run (Vinifera, docs/design.md §10) read back on the driver: one
:class:`~scotbed.vinifera.metrics.EventRecord` per published event from the event logs, the record the
simulator keeps, so a test compares processes and simulator event by event; the verdict and the small
report on the figures, which Spark computes (:mod:`scotbed.vinifera.analysis.section`, their one home).
The oracle (``interested``) is every peer whose logged subscription matches the event.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.analysis.report import image_data_uri
from scotbed.vinifera import codec
from scotbed.vinifera.interest import Subscription
from scotbed.vinifera.metrics import EventRecord


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
        elif e["ev"] == contract.EV_DROP:
            rec.dropped += 1
        elif e["ev"] == contract.DELIVER:
            if name in rec.deliveries:
                rec.extra_deliveries += 1
            else:
                rec.deliveries[name], rec.tree_hops[name] = e["hops"], e["tree_hops"]
    return [out[k] for k in sorted(out)], names


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


def report_html(
    name: str, routing: str, s: Mapping[str, Any], plots: Mapping[str, Path] | None = None
) -> str:
    """A self-contained page with the peers' figures (the summary's ``peers`` section) and plots."""
    rows = [
        ("events", s["events"]),
        ("hit ratio", f"{s['hit_ratio']:.3f}"),
        ("missed / duplicate deliveries", f"{s['missed']} / {s['extra_deliveries']}"),
        ("event messages dropped (capacity per round)", s["dropped"]),
        ("overhead (share of event messages at uninterested peers)", f"{s['overhead']:.3f}"),
        ("path length, hops (delivery-tree part)", f"{s['path_length']:.2f} ({s['tree_depth']:.2f})"),
        ("idle peers", f"{s['idle_share']:.1%}"),
        ("maximum load", f"{s['max_load']:.3f}"),
        *((f"peers with load ≤ {p}", f"{v:.1%}") for p, v in s["load_cdf"].items()),
    ]
    body = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    title = html.escape(f"{name}: {routing}")
    images = "".join(
        f'<h2>{html.escape(k)}</h2><img alt="{html.escape(k)}" src="{image_data_uri(p)}">'
        for k, p in (plots or {}).items()
    )
    return (
        f"<!doctype html><meta charset=utf-8><title>{title}</title><h1>{title}</h1><table>{body}</table>"
        f"{images}\n"
    )
