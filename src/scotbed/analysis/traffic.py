"""Traffic quality per broker, from the events and the oracle's interested brokers, in one action.

A visit (``notif_in`` from another broker) is *relay-only* when the receiving broker hosts no
subscriber the publication matches. A forwarded copy X→Y is *useful* when Y hosts a matching
subscriber or forwarded it on over a useful link (:mod:`scotbed.analysis.forwarding` states the
rule in plain Python); the rest is false-positive traffic. The fixpoint runs as Spark
higher-order functions over each publication's edges (newest first, so a causally ordered log
converges in one pass; further passes run only while brokers are still being added), so no
Python runs here.
"""

from __future__ import annotations

from typing import cast

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from scotbed import contract
from scotbed.analysis.metrics import of, to_broker

# One pass over the edges: add the sender of every copy whose receiver is useful.
_PASS = (
    "aggregate(edges, named_struct('u', st.u, 'c', false), (a, e) -> "
    "IF(array_contains(a.u, e.link) AND NOT array_contains(a.u, e.node), "
    "named_struct('u', array_append(a.u, e.node), 'c', true), a))"
)
# Passes until nothing changes (at most one per edge, plus the one that sees no change).
USEFUL = (
    "aggregate(sequence(0, size(edges)), named_struct('u', interested, 'c', true), "
    f"(st, i) -> IF(st.c, {_PASS}, st)).u"
)


def copies_per_publication(events: DataFrame) -> DataFrame:
    """(pub_id, visits, edges) from one scan: the brokers each copy from another broker visited, and
    every copy forwarded to a broker as (ts_ns, node, link), newest first."""
    hop = of(events, contract.NOTIF_IN, contract.NOTIF_OUT).where(to_broker())
    edge = F.when(F.col("ev") == contract.NOTIF_OUT, F.struct("ts_ns", "node", "link"))
    return hop.groupBy("pub_id").agg(
        F.collect_list(F.when(F.col("ev") == contract.NOTIF_IN, F.col("node"))).alias("visits"),
        F.sort_array(F.collect_list(edge), asc=False).alias("edges"),
    )


def _counted(node: F.Column, visit: F.Column, relay_only: F.Column, im: F.Column, fp: F.Column) -> F.Column:
    """One visit or forwarded copy at ``node``, as the counts it adds."""
    flags = {"visits": visit, "relay_only": relay_only, "ims": im, "fp_ims": fp}
    return F.struct(node.alias("node"), *[c.cast("long").alias(k) for k, c in flags.items()])


def traffic_per_broker(events: DataFrame, interested: DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(relay, false_positive_traffic) per broker: one scan of the copies, one join, one action.

    ``interested`` has (pub_id, broker) for every broker hosting a subscriber the publication
    matches, repeated or not. relay: node, visits, relay_only. false_positive_traffic: node, ims, fp_ims.
    """
    want = interested.groupBy("pub_id").agg(F.collect_set("broker").alias("interested"))
    per_pub = (
        copies_per_publication(events)
        .join(want, "pub_id", "left")
        .select(
            "visits",
            "edges",
            F.coalesce(F.col("interested"), F.array().cast("array<string>")).alias("interested"),
        )
    )
    useful = per_pub.select("visits", "edges", "interested", F.expr(USEFUL).alias("useful"))
    one, zero = F.lit(1), F.lit(0)
    counted = F.concat(
        F.transform("visits", lambda v: _counted(v, one, ~F.array_contains("interested", v), zero, zero)),
        F.transform(
            "edges", lambda e: _counted(e["node"], zero, zero, one, ~F.array_contains("useful", e["link"]))
        ),
    )
    cols = ["visits", "relay_only", "ims", "fp_ims"]
    both = cast(
        pd.DataFrame,
        useful.select(F.explode(counted).alias("c"))
        .groupBy(F.col("c.node").alias("node"))
        .agg(*[F.sum(f"c.{k}").alias(k) for k in cols])
        .toPandas(),
    )
    both = both.sort_values("node", kind="stable").reset_index(drop=True).astype({c: "int64" for c in cols})

    def part(seen: str, kept: list[str]) -> pd.DataFrame:
        return both[both[seen] > 0][["node", *kept]].reset_index(drop=True)

    return part("visits", ["visits", "relay_only"]), part("ims", ["ims", "fp_ims"])
