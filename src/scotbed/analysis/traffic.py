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
from scotbed.analysis.metrics import of

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


def _to_broker() -> F.Column:
    return F.col("link").isNotNull() & (F.col("link") != "")


def false_positive_edges(events: DataFrame, interested: DataFrame) -> DataFrame:
    """(node, fp) for every notification copy forwarded to a broker; fp: nothing matched downstream."""
    edges = (
        of(events, contract.NOTIF_OUT)
        .where(_to_broker())
        .groupBy("pub_id")
        .agg(F.sort_array(F.collect_list(F.struct("ts_ns", "node", "link")), asc=False).alias("edges"))
    )
    want = interested.groupBy("pub_id").agg(F.collect_set("broker").alias("interested"))
    per_pub = edges.join(want, "pub_id", "left").select(
        "edges",
        F.coalesce(F.col("interested"), F.array().cast("array<string>")).alias("interested"),
    )
    useful = per_pub.select("edges", F.expr(USEFUL).alias("useful"))
    return useful.select(F.explode("edges").alias("e"), "useful").select(
        F.col("e.node").alias("node"), (~F.array_contains("useful", F.col("e.link"))).alias("fp")
    )


def traffic_per_broker(events: DataFrame, interested: DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(relay, false_positive_traffic) per broker, computed in one action.

    ``interested`` has (pub_id, broker) for every broker hosting a subscriber the publication
    matches, repeated or not (it is made distinct here, once). relay: node, visits, relay_only.
    false_positive_traffic: node, ims, fp_ims.
    """
    visits = of(events, contract.NOTIF_IN).where(_to_broker()).select("pub_id", "node")
    mine = interested.select("pub_id", F.col("broker").alias("node"), F.lit(1).alias("hit")).distinct()
    relay = (
        visits.join(mine, ["pub_id", "node"], "left")
        .groupBy("node")
        .agg(
            F.count("*").alias("visits"),
            F.sum(F.when(F.col("hit").isNull(), 1).otherwise(0)).alias("relay_only"),
        )
    )
    fp = (
        false_positive_edges(events, interested)
        .groupBy("node")
        .agg(F.count("*").alias("ims"), F.count(F.when(F.col("fp"), 1)).alias("fp_ims"))
    )
    both = cast(
        pd.DataFrame,
        relay.withColumn("kind", F.lit("relay"))
        .unionByName(fp.withColumn("kind", F.lit("fp")), allowMissingColumns=True)
        .toPandas(),
    )

    def part(kind: str, cols: list[str]) -> pd.DataFrame:
        p = both[both["kind"] == kind].sort_values("node", kind="stable").reset_index(drop=True)
        return p[["node", *cols]].astype({c: "int64" for c in cols})

    return part("relay", ["visits", "relay_only"]), part("fp", ["ims", "fp_ims"])
