"""The ``selforg`` section of summary.json (a run with ``topology.costs`` or
``topology.self_organising``): the paper's cost (Eq. 2) as paid per window, the reconfiguration
count and rate, the topology manager's own message overhead, and Eq. 2 per notification with that
overhead counted, as the paper's Fig. 4 counts it. Spark counts; the arithmetic is
:mod:`scotbed.selforg.analysis.cost`'s. With cost redraws each count carries the table in force at its
broker (from the broker's ``cost_redraw`` events), and is priced with that table."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd
from pyspark.sql import Column
from pyspark.sql import functions as F

from scotbed.analysis.context import RunData
from scotbed.analysis.metrics import of
from scotbed.contract import COST_REDRAW, LINK_UP, NOTIF_IN, NOTIF_OUT, TOPO_OUT
from scotbed.selforg import redraws
from scotbed.selforg.analysis.cost import overhead, windows_from_counts

WINDOW_NS = 1_000_000_000  # one point of the cost-over-time curve


@dataclass(frozen=True)
class SelfOrg:
    """None (no key): the run has no costs and no topology manager."""

    block: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any] | None:
        return self.block


def selforg_section(d: RunData) -> SelfOrg:
    t = d.run.spec.topology
    if t.costs is None and t.self_organising is None:
        return SelfOrg()
    vertex_of = {b["id"]: b["vertex"] for b in (d.run.topology or {}).get("brokers", [])}
    base, timeline = t.costs.timeline() if t.costs is not None else redraws.parse(None)
    costs = redraws.InForce(redraws.tables(base, timeline, sorted(set(vertex_of.values()))))
    table = _table_in_force(d)
    notes = of(d.events, NOTIF_IN, NOTIF_OUT)
    span = notes.agg(F.min("ts_ns"), F.max("ts_ns")).first()
    if span is None or span[0] is None:
        return SelfOrg()
    t0, t1 = int(span[0]), int(span[1])
    window = F.floor((F.col("ts_ns") - F.lit(t0)) / F.lit(WINDOW_NS)).cast("long")
    counts = notes.withColumn("w", window).withColumn("k", table)
    counts_rows = counts.groupBy("w", "ev", "node", "link", "k").count().collect()
    windows = windows_from_counts(
        ((r["w"], r["ev"], r["node"], r["link"] or "", r["count"], r["k"]) for r in counts_rows),
        costs,
        vertex_of,
        t0,
        WINDOW_NS,
    )
    sent = (
        of(d.events, TOPO_OUT)
        .withColumn("k", table)
        .groupBy("node", "link", "kind", "k")
        .agg(F.count("*"), F.sum("size"))
        .collect()
    )
    rows = ((r[0], r[1], r[2], int(r[4]), int(r[5] or 0), int(r[3])) for r in sent)
    over = overhead(rows, costs, vertex_of)
    swaps = of(d.events, LINK_UP).count() // 2  # each link_up is logged at both ends
    d.tables["selforg_cost"] = pd.DataFrame(
        [((w.start_ns - t0) / 1e9, w.cost, w.published, w.per_notification) for w in windows],
        columns=["t_s", "cost", "published", "cost_per_notification"],
    )
    total, published = sum(w.cost for w in windows), sum(w.published for w in windows)
    return SelfOrg(
        {
            "heuristic": t.self_organising.heuristic if t.self_organising else None,
            "window_s": WINDOW_NS / 1e9,
            "cost_total": total,
            "published": published,
            "cost_per_notification": total / published if published else None,
            # Fig. 4 counts "the communication and processing costs caused by forwarding notifications
            # and by additional messages the heuristics produce" (§5.1): delivery plus overhead
            "cost_with_overhead_per_notification": (total + over.cost) / published if published else None,
            "reconfigurations": swaps,
            "reconfigurations_per_s": swaps / max((t1 - t0) / 1e9, 1e-9),
            "cost_redraws": len(timeline),
            "overhead": asdict(over),
        }
    )


def _table_in_force(d: RunData) -> Column:
    """The cost table an event was priced with: its broker's last ``cost_redraw`` at or before it."""
    k: Column = F.lit(0)
    for r in of(d.events, COST_REDRAW).select("node", "ts_ns", "n").orderBy("ts_ns").collect():
        k = F.when(
            (F.col("node") == r["node"]) & (F.col("ts_ns") >= r["ts_ns"]), F.lit(int(r["n"]))
        ).otherwise(k)
    return k
