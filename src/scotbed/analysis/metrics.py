"""The run metrics, each a small function over Spark DataFrames of events (DESIGN §5).

Functions return a Spark DataFrame when the result grows with the run (one row
per delivery) and a pandas DataFrame or dict when it is bounded by the number
of brokers, subscriptions or curve points, so nothing big is collected on the
driver. Times are ``ts_ns`` wall clock; delays are reported in ms, matching in µs.
IMs count inter-broker messages only: ``*_out`` events whose ``link`` is a
broker id (``""`` is a local client).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from scotbed.analysis.forwarding import false_positive_edges
from scotbed.analysis.stats import dist_from_quantiles

ACCURACY = 100_000  # percentile_approx: relative rank error 1e-5
SUMMARY_QUANTILES = (0.5, 0.9, 0.99)
CDF_QUANTILES = tuple(i / 100 for i in range(101)) + tuple(0.99 + i / 1000 for i in range(1, 10))
LOAD_EVENTS = ("sub_in", "sub_out", "unsub_in", "unsub_out", "notif_in", "notif_out", "match", "deliver")
MIN_BIN_NS = 250_000_000
MAX_BINS = 400


def _ev(name: str) -> Column:
    return F.col("ev") == name


def _to_broker() -> Column:
    return F.col("link").isNotNull() & (F.col("link") != "")


def distribution(df: DataFrame, col: str) -> dict[str, Any]:
    """count, mean, p50, p90, p99, max of one numeric column (nulls ignored)."""
    row = df.agg(
        F.count(col).alias("n"),
        F.mean(col).alias("mean"),
        F.percentile_approx(col, list(SUMMARY_QUANTILES), ACCURACY).alias("q"),
        F.max(col).alias("max"),
    ).first()
    assert row is not None
    qs = row["q"] or [None] * len(SUMMARY_QUANTILES)
    return dist_from_quantiles(row["n"], row["mean"], qs, row["max"])


def quantile_curve(df: DataFrame, col: str) -> list[tuple[float, float]]:
    """(quantile, value) points of a column's CDF, computed in Spark (for the CDF plot)."""
    row = df.agg(F.percentile_approx(col, list(CDF_QUANTILES), ACCURACY).alias("q")).first()
    values = (row["q"] if row else None) or []
    return [(q, float(v)) for q, v in zip(CDF_QUANTILES, values, strict=False) if v is not None]


# --- subscriptions ---------------------------------------------------------------------------


def subscription_delays(events: DataFrame) -> DataFrame:
    """Per subscription: issue time, time the last broker stored it (last ``sub_in``), delay, IMs.

    The issue time is the client's ``subscribe`` event, or the first ``sub_in`` when the
    client log is missing. IMs are the ``sub_out`` events towards another broker.
    """
    issued = events.where(_ev("subscribe")).groupBy("sub_id").agg(F.min("ts_ns").alias("issued_ns"))
    stored = (
        events.where(_ev("sub_in"))
        .groupBy("sub_id")
        .agg(
            F.min("ts_ns").alias("first_in_ns"),
            F.max("ts_ns").alias("stored_ns"),
            F.count("*").alias("sub_in"),
        )
    )
    ims = events.where(_ev("sub_out") & _to_broker()).groupBy("sub_id").agg(F.count("*").alias("ims"))
    df = stored.join(issued, "sub_id", "full").join(ims, "sub_id", "left")
    issued_ns = F.coalesce(F.col("issued_ns"), F.col("first_in_ns"))
    return df.select(
        "sub_id",
        issued_ns.alias("issued_ns"),
        "stored_ns",
        F.coalesce(F.col("sub_in"), F.lit(0)).alias("sub_in"),
        F.coalesce(F.col("ims"), F.lit(0)).alias("ims"),
        ((F.col("stored_ns") - issued_ns) / 1e6).alias("delay_ms"),
    )


def unsubscription_ims(events: DataFrame) -> int:
    return events.where(_ev("unsub_out") & _to_broker()).count()


def last_arrivals(events: DataFrame, ev: str) -> dict[str, int]:
    """sub_id -> time of the last ``ev`` (``sub_in``/``unsub_in``) at any broker: end of propagation."""
    rows = events.where(_ev(ev)).groupBy("sub_id").agg(F.max("ts_ns").alias("t")).collect()
    return {r["sub_id"]: int(r["t"]) for r in rows}


def first_client_times(events: DataFrame, ev: str) -> dict[str, int]:
    """sub_id -> time of the client's ``subscribe``/``unsubscribe`` event."""
    rows = events.where(_ev(ev)).groupBy("sub_id").agg(F.min("ts_ns").alias("t")).collect()
    return {r["sub_id"]: int(r["t"]) for r in rows}


# --- notifications ---------------------------------------------------------------------------


def publication_times(events: DataFrame, publications: DataFrame | None) -> DataFrame:
    """pub_id -> intended_ns, sent_ns: from the client ``publish`` events, else the workload file."""
    ev = (
        events.where(_ev("publish"))
        .groupBy("pub_id")
        .agg(
            F.min("intended_ns").alias("i_ev"),
            F.min(F.coalesce(F.col("sent_ns"), F.col("ts_ns"))).alias("s_ev"),
        )
    )
    if publications is None:
        return ev.select("pub_id", F.col("i_ev").alias("intended_ns"), F.col("s_ev").alias("sent_ns"))
    wl = publications.groupBy("pub_id").agg(F.min("intended_ns").alias("i_wl"), F.min("ts_ns").alias("s_wl"))
    return ev.join(wl, "pub_id", "full").select(
        "pub_id",
        F.coalesce("i_ev", "i_wl").alias("intended_ns"),
        F.coalesce("s_ev", "s_wl").alias("sent_ns"),
    )


def deliveries(events: DataFrame, pub_times: DataFrame) -> DataFrame:
    """One row per client ``receive``: delay from intended publish time and from actual send."""
    recv = events.where(_ev("receive")).select(
        "pub_id", "sub_id", F.col("node").alias("client"), F.col("ts_ns").alias("recv_ns"), "hops"
    )
    d = recv.join(pub_times, "pub_id", "left")
    return d.select(
        "pub_id",
        "sub_id",
        "client",
        "recv_ns",
        "hops",
        "intended_ns",
        "sent_ns",
        ((F.col("recv_ns") - F.col("intended_ns")) / 1e6).alias("delay_ms"),
        ((F.col("recv_ns") - F.col("sent_ns")) / 1e6).alias("send_delay_ms"),
    )


def notification_delay(deliv: DataFrame) -> dict[str, Any]:
    """delay_ms (intended→receive) and send_delay_ms (sent→receive) with the fraction under 1 s."""
    out: dict[str, Any] = {}
    for col in ("delay_ms", "send_delay_ms"):
        d = distribution(deliv, col)
        row = deliv.agg(F.avg((F.col(col) < 1000).cast("double")).alias("f")).first()
        d["under_1s"] = float(row["f"]) if row and row["f"] is not None else 0.0
        out[col] = d
    return out


def hops_distribution(deliv: DataFrame) -> pd.DataFrame:
    """hops -> deliveries (broker-to-broker hops the delivered copy took)."""
    return deliv.where(F.col("hops").isNotNull()).groupBy("hops").count().orderBy("hops").toPandas()


def matching_per_broker(events: DataFrame) -> pd.DataFrame:
    """Per broker: matchings, mean/p99/max matching delay (µs), mean match-set size."""
    return (
        events.where(_ev("match"))
        .groupBy("node")
        .agg(
            F.count("*").alias("matches"),
            F.mean("us").alias("mean_us"),
            F.percentile_approx("us", 0.99, ACCURACY).alias("p99_us"),
            F.max("us").alias("max_us"),
            F.mean("n").alias("mean_matched"),
        )
        .orderBy("node")
        .toPandas()
    )


def notification_ims(events: DataFrame) -> pd.DataFrame:
    """Per broker: notification copies sent to other brokers, and how many were dynamic (re-routed)."""
    out = events.where(_ev("notif_out") & _to_broker())
    return (
        out.groupBy("node")
        .agg(
            F.count("*").alias("ims"),
            F.sum(F.coalesce(F.col("dynamic"), F.lit(False)).cast("long")).alias("dynamic"),
        )
        .orderBy("node")
        .toPandas()
    )


def stability_curve(deliv: DataFrame, window: int) -> pd.DataFrame:
    """Max delay of each consecutive window of ``window`` receives, in receive order (OctopiS Fig. 11).

    The global receive index is built without a single-partition window: after a range
    sort, each row's index is its partition's offset plus its position inside the partition.
    """
    if window < 1:
        raise ValueError(f"stability window must be >= 1, got {window}")
    rows = deliv.where(F.col("delay_ms").isNotNull()).select("recv_ns", "delay_ms", "pub_id", "sub_id")
    ordered = (
        rows.orderBy("recv_ns", "pub_id", "sub_id")
        .withColumn("pid", F.spark_partition_id())
        .withColumn("mid", F.monotonically_increasing_id())
        .persist()
    )
    try:
        counts = ordered.groupBy("pid").agg(F.count("*").alias("n")).orderBy("pid").collect()
        offsets: list[tuple[int, int]] = []
        acc = 0
        for r in counts:
            offsets.append((int(r["pid"]), acc))
            acc += int(r["n"])
        if not offsets:
            return pd.DataFrame(
                columns=["window", "start_ns", "end_ns", "count", "max_delay_ms", "mean_delay_ms"]
            )
        offset = F.lit(0)
        for pid, off in offsets:
            offset = F.when(F.col("pid") == pid, F.lit(off)).otherwise(offset)
        local = F.col("mid") - F.shiftleft(F.col("pid").cast("long"), 33)
        idx = offset + local
        curve = (
            ordered.withColumn("window", F.floor(idx / window))
            .groupBy("window")
            .agg(
                F.min("recv_ns").alias("start_ns"),
                F.max("recv_ns").alias("end_ns"),
                F.count("*").alias("count"),
                F.max("delay_ms").alias("max_delay_ms"),
                F.mean("delay_ms").alias("mean_delay_ms"),
            )
            .orderBy("window")
            .toPandas()
        )
    finally:
        ordered.unpersist()
    return curve


def burst_from_publications(publications: DataFrame | None) -> tuple[int, int] | None:
    """(start, end) intended ns of the high-rate publisher: a publisher whose name contains ``hrp``."""
    if publications is None:
        return None
    row = (
        publications.where(F.lower(F.col("publisher")).contains("hrp"))
        .agg(F.min("intended_ns").alias("a"), F.max("intended_ns").alias("b"))
        .first()
    )
    if row is None or row["a"] is None:
        return None
    return int(row["a"]), int(row["b"])


def burst_from_spec(spec: dict[str, Any], first_intended_ns: int) -> tuple[int, int] | None:
    """The burst the spec's ``workload.hrp`` asks for, counted from the first publication."""
    hrp = (spec.get("workload") or {}).get("hrp")
    if not hrp:
        return None
    scale = float((spec.get("workload") or {}).get("time_scale") or 1.0)
    rate = float(hrp["rate_per_minute"]) / scale
    start = first_intended_ns + int(float(hrp.get("start_s", 0)) * 1e9)
    return start, start + int(float(hrp["notifications"]) / rate * 60e9)


# --- queues, tables, load --------------------------------------------------------------------


def _bins(df: DataFrame) -> tuple[int, int] | None:
    row = df.agg(F.min("ts_ns").alias("a"), F.max("ts_ns").alias("b")).first()
    if row is None or row["a"] is None:
        return None
    t0, t1 = int(row["a"]), int(row["b"])
    return t0, max(MIN_BIN_NS, (t1 - t0) // MAX_BINS + 1)


def queue_series(events: DataFrame) -> pd.DataFrame:
    """Queue length over time per broker and link (``link == ""`` is the input queue).

    Samples are binned (at least 250 ms, at most 400 bins) keeping each bin's maximum length
    and mean congestion element; ``t_s`` is the bin start relative to the first sample.
    """
    q = events.where(_ev("queue"))
    b = _bins(q)
    if b is None:
        return pd.DataFrame(columns=["node", "link", "t_s", "max_len", "mean_ce", "direction"])
    t0, width = b
    return (
        q.withColumn("bin", F.floor((F.col("ts_ns") - t0) / width))
        .groupBy("node", F.coalesce(F.col("link"), F.lit("")).alias("link"), "bin")
        .agg(F.max("len").alias("max_len"), F.mean("ce").alias("mean_ce"))
        .select(
            "node",
            "link",
            (F.col("bin") * (width / 1e9)).alias("t_s"),
            "max_len",
            "mean_ce",
            F.when(F.col("link") == "", "input").otherwise("output").alias("direction"),
        )
        .orderBy("node", "link", "t_s")
        .toPandas()
    )


def queue_maxima(events: DataFrame) -> dict[str, int]:
    q = events.where(_ev("queue"))
    is_in = F.coalesce(F.col("link"), F.lit("")) == ""
    row = q.agg(
        F.max(F.when(~is_in, F.col("len"))).alias("out"), F.max(F.when(is_in, F.col("len"))).alias("inp")
    ).first()
    return {
        "max_output_len": int(row["out"] or 0) if row else 0,
        "max_input_len": int(row["inp"] or 0) if row else 0,
    }


def table_series(events: DataFrame) -> pd.DataFrame:
    """Routing-table size over time per broker (binned like :func:`queue_series`)."""
    t = events.where(_ev("table"))
    b = _bins(t)
    if b is None:
        return pd.DataFrame(columns=["node", "t_s", "size"])
    t0, width = b
    return (
        t.withColumn("bin", F.floor((F.col("ts_ns") - t0) / width))
        .groupBy("node", "bin")
        .agg(F.max("size").alias("size"))
        .select("node", (F.col("bin") * (width / 1e9)).alias("t_s"), "size")
        .orderBy("node", "t_s")
        .toPandas()
    )


def table_sizes(events: DataFrame) -> pd.DataFrame:
    """Per broker: the largest and the last sampled routing-table size."""
    t = events.where(_ev("table"))
    return (
        t.groupBy("node")
        .agg(F.max("size").alias("max_size"), F.max_by("size", "ts_ns").alias("final_size"))
        .orderBy("node")
        .toPandas()
    )


def load_per_broker(events: DataFrame, brokers: Sequence[str]) -> pd.DataFrame:
    """Per broker: count of each broker event, and ``messages`` = all messages in and out.

    Brokers from the topology that logged nothing appear with zeros, so the distribution
    is over the whole overlay.
    """
    pivot = cast(
        pd.DataFrame,
        events.where(F.col("ev").isin(list(LOAD_EVENTS)))
        .groupBy("node")
        .pivot("ev", list(LOAD_EVENTS))
        .count()
        .toPandas(),
    )
    pivot = (
        pivot.set_index("node").reindex(sorted(set(brokers) | set(pivot["node"]))).fillna(0).astype("int64")
    )
    pivot["messages"] = pivot[[c for c in LOAD_EVENTS if c.endswith(("_in", "_out"))]].sum(axis=1)
    return pivot.reset_index().rename(columns={"index": "node"})


def load_balance(load: pd.DataFrame) -> dict[str, float]:
    """Spread of per-broker messages: coefficient of variation and max/mean (1.0 = perfectly even)."""
    m = load["messages"].astype(float)
    mean = float(m.mean()) if len(m) else 0.0
    if mean == 0:
        return {"mean_messages": 0.0, "cv": 0.0, "max_over_mean": 0.0}
    return {"mean_messages": mean, "cv": float(m.std(ddof=0) / mean), "max_over_mean": float(m.max() / mean)}


def drops(events: DataFrame) -> dict[str, int]:
    rows = events.where(_ev("drop")).groupBy("reason").count().collect()
    return {str(r["reason"]): int(r["count"]) for r in rows}


# --- traffic quality (needs the oracle's interested brokers) ----------------------------------


def relay_overhead(events: DataFrame, interested: DataFrame) -> pd.DataFrame:
    """Per broker: notifications received from another broker, and those it only relayed.

    ``interested`` has (pub_id, broker) for every broker hosting a subscriber the publication
    matches; a visit is relay-only when the receiving broker is not among them.
    """
    visits = events.where(_ev("notif_in") & _to_broker()).select("pub_id", "node")
    mine = interested.select("pub_id", F.col("broker").alias("node"), F.lit(1).alias("hit")).distinct()
    return (
        visits.join(mine, ["pub_id", "node"], "left")
        .groupBy("node")
        .agg(
            F.count("*").alias("visits"),
            F.sum(F.when(F.col("hit").isNull(), 1).otherwise(0)).alias("relay_only"),
        )
        .orderBy("node")
        .toPandas()
    )


def _fp_rows(row: Any) -> list[tuple[str, int, int]]:
    edges = [(e["node"], e["link"]) for e in row["edges"]]
    fps = false_positive_edges(edges, row["brokers"] or [])
    per: dict[str, list[int]] = {}
    for s, _ in edges:
        per.setdefault(s, [0, 0])[0] += 1
    for s, _ in fps:
        per[s][1] += 1
    return [(node, c[0], c[1]) for node, c in per.items()]


def false_positive_traffic(events: DataFrame, interested: DataFrame) -> pd.DataFrame:
    """Per broker: notification copies forwarded to brokers, and those with nothing matching downstream.

    Grouped per publication (a few dozen edges each) and resolved by :mod:`forwarding`.
    """
    edges = (
        events.where(_ev("notif_out") & _to_broker())
        .groupBy("pub_id")
        .agg(F.collect_list(F.struct("node", "link")).alias("edges"))
    )
    want = interested.groupBy("pub_id").agg(F.collect_set("broker").alias("brokers"))
    per_pub = edges.join(want, "pub_id", "left").rdd.flatMap(_fp_rows)
    spark = events.sparkSession
    df = spark.createDataFrame(per_pub, "node STRING, ims BIGINT, fp_ims BIGINT")
    return (
        df.groupBy("node")
        .agg(F.sum("ims").alias("ims"), F.sum("fp_ims").alias("fp_ims"))
        .orderBy("node")
        .toPandas()
    )
