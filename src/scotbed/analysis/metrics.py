"""The run metrics as Spark DataFrame expressions over the events (docs/design.md §5), few actions each.

Functions return a Spark DataFrame when the result grows with the run (one row
per delivery) and a pandas DataFrame or dict when it is bounded by the number
of brokers, subscriptions or curve points, so nothing big is collected on the
driver. Aggregations that read the same events share one action: per-broker
facts are one group-by, per-subscription facts another, every delivery
statistic a third. Times are ``ts_ns`` wall clock; delays are reported in ms,
matching in µs. IMs count inter-broker messages only: ``*_out`` events whose
``link`` is a broker id (``""`` is a local client).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from scotbed import contract
from scotbed.analysis.stats import dist_from_quantiles, rank_quantiles
from scotbed.experiment.spec import Spec

ACCURACY = 100_000  # percentile_approx: relative rank error 1e-5
SUMMARY_QUANTILES = (0.5, 0.9, 0.99)
CDF_QUANTILES = tuple(i / 100 for i in range(101)) + tuple(0.99 + i / 1000 for i in range(1, 10))
#: the broker events that are work: a message in or out, a match, a delivery (the load table's columns)
NODE_EVENTS = contract.BROKER_EVENTS
LOAD_EVENTS = tuple(e for e in NODE_EVENTS if e not in (contract.QUEUE, contract.TABLE, contract.DROP))
SUB_EVENTS = (contract.SUBSCRIBE, contract.UNSUBSCRIBE, contract.SUB_IN, contract.SUB_OUT, contract.UNSUB_IN)


def _ev(name: str) -> Column:
    return F.col("ev") == name


def to_broker() -> Column:
    """True for a message whose ``link`` is another broker (``""`` is a local client)."""
    return F.col("link").isNotNull() & (F.col("link") != "")


def input_longest() -> Column:
    """An input-queue sample's longest length: its ``peak`` since the previous sample (a burst can
    come and go between two samples), or ``len`` in a log without it."""
    return F.greatest(F.col("len"), F.coalesce(F.col("peak"), F.col("len")))


def of(events: DataFrame, *names: str) -> DataFrame:
    """The events named ``names`` (a SQL condition: one JVM call, where ``isin`` makes several per name)."""
    return events.where("ev IN (" + ", ".join(sql_string(n) for n in names) + ")")


def sql_string(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def distribution(df: DataFrame, col: str) -> dict[str, Any]:
    """count, mean, p50, p90, p99, max of one numeric column (nulls ignored)."""
    row = df.agg(*dist_aggs(col, SUMMARY_QUANTILES)).first()
    assert row is not None
    return dist_of(row, col, SUMMARY_QUANTILES)


# percentile_approx keeps every value (its summary is exact) below ACCURACY / 2 values: up to there
# :func:`local_distribution` gives the same figures from collected values, and beyond it the exact
# figures Spark approximates.
EXACT_ROWS = ACCURACY // 2


def local_distribution(values: pd.Series) -> dict[str, Any]:
    """:func:`distribution` of collected values (nulls ignored), each quantile by rank."""
    return _local_dist(values, SUMMARY_QUANTILES)[0]


def _local_dist(values: pd.Series, quantiles: Sequence[float]) -> tuple[dict[str, Any], dict[float, Any]]:
    """(the distribution, each quantile's value by rank) of collected values, nulls ignored."""
    xs = values.dropna().astype(float)
    some = len(xs) > 0
    by_q = dict(zip(quantiles, rank_quantiles(xs.to_numpy(), quantiles), strict=True))
    summary = [by_q[q] for q in SUMMARY_QUANTILES]
    return dist_from_quantiles(
        len(xs), xs.mean() if some else None, summary, xs.max() if some else None
    ), by_q


def dist_aggs(col: str, quantiles: Sequence[float] = SUMMARY_QUANTILES) -> list[Column]:
    """The aggregates :func:`dist_of` reads: one distribution inside a larger ``agg`` (one action)."""
    return [
        F.count(col).alias(f"{col}_n"),
        F.mean(col).alias(f"{col}_mean"),
        F.percentile_approx(col, double_array(quantiles), ACCURACY).alias(f"{col}_q"),
        F.max(col).alias(f"{col}_max"),
    ]


def double_array(values: Sequence[float]) -> Column:
    """A literal array of doubles as one SQL expression: one call into the JVM, where ``F.lit`` of a list
    makes several per element (a CDF's hundred quantiles cost about 0.3 s on a cold JVM)."""
    return F.expr("array(" + ", ".join(f"{float(v)!r}D" for v in values) + ")")


def dist_of(row: Any, col: str, quantiles: Sequence[float] = SUMMARY_QUANTILES) -> dict[str, Any]:
    qs = dict(zip(quantiles, row[f"{col}_q"] or [], strict=False))
    return dist_from_quantiles(
        row[f"{col}_n"], row[f"{col}_mean"], [qs.get(q) for q in SUMMARY_QUANTILES], row[f"{col}_max"]
    )


# --- per subscription ------------------------------------------------------------------------


def subscription_facts(events: DataFrame) -> DataFrame:
    """Per sub_id, one group-by over the subscription events: the subscription table and the oracle's times.

    ``issued_ns`` is the client's ``subscribe`` event, or the first ``sub_in`` when the client log is
    missing; ``stored_ns`` is the last ``sub_in`` (:func:`stored_at_first_wave` replaces it with the end
    of the subscribe's own propagation); ``ims`` the ``sub_out`` events
    towards another broker. ``in_table`` marks the rows of the subscription table (a ``subscribe``
    or ``sub_in`` was logged).
    """
    ts = F.col("ts_ns")
    subscribe_ns = F.min(F.when(_ev(contract.SUBSCRIBE), ts))
    first_in_ns = F.min(F.when(_ev(contract.SUB_IN), ts))
    facts = (
        of(events, *SUB_EVENTS)
        .groupBy("sub_id")
        .agg(
            subscribe_ns.alias("subscribe_ns"),
            first_in_ns.alias("first_in_ns"),
            F.max(F.when(_ev(contract.SUB_IN), ts)).alias("stored_ns"),
            F.count(F.when(_ev(contract.SUB_IN), 1)).alias("sub_in"),
            F.count(F.when(_ev(contract.SUB_OUT) & to_broker(), 1)).alias("ims"),
            F.max(F.when(_ev(contract.UNSUB_IN), ts)).alias("unsub_settled_ns"),
            F.min(F.when(_ev(contract.UNSUBSCRIBE), ts)).alias("unsubscribe_ns"),
        )
    )
    issued_ns = F.coalesce(F.col("subscribe_ns"), F.col("first_in_ns"))
    return facts.select(
        "sub_id",
        issued_ns.alias("issued_ns"),
        "stored_ns",
        "sub_in",
        "ims",
        ((F.col("stored_ns") - issued_ns) / 1e6).alias("delay_ms"),
        (F.col("subscribe_ns").isNotNull() | (F.col("sub_in") > 0)).alias("in_table"),
        "subscribe_ns",
        "unsub_settled_ns",
        "unsubscribe_ns",
    )


SUBSCRIPTION_COLUMNS = ["sub_id", "issued_ns", "stored_ns", "sub_in", "ims", "delay_ms"]


def stored_at_first_wave(subs: pd.DataFrame, ends: Mapping[str, list[int]]) -> pd.DataFrame:
    """The subscription table with ``stored_ns`` (and ``delay_ms``) at the end of each subscription's
    first propagation wave (``ends``: :func:`scotbed.analysis.propagation.wave_ends`), not its last
    ``sub_in``: a covering re-forward of a settled subscription, when an unsubscription releases it, is
    no part of its subscribe's delay. A subscription without a traced wave keeps its last ``sub_in``."""
    waves = [ends[sid][0] if ends.get(sid) else None for sid in subs["sub_id"]]
    first = pd.Series(pd.array(waves, dtype="Int64"), index=subs.index)
    stored = first.fillna(subs["stored_ns"].astype("Int64"))  # integers: ns do not fit a float's mantissa
    delay_ms = (stored - subs["issued_ns"].astype("Int64")).astype("float64") / 1e6
    return subs.assign(stored_ns=stored, delay_ms=delay_ms)


def times_of(facts: pd.DataFrame, col: str) -> dict[str, int]:
    """sub_id -> a time column of :func:`subscription_facts` (rows where it is known)."""
    known = facts[facts[col].notna() & facts["sub_id"].notna()]
    return {str(s): int(t) for s, t in zip(known["sub_id"], known[col], strict=True)}


# --- per broker ------------------------------------------------------------------------------


def node_facts(events: DataFrame) -> pd.DataFrame:
    """One group-by (node, ev, drop reason) over the broker events; every per-broker metric reads it.
    The matching percentiles come from :func:`matching_delays`: a percentile would put every aggregate
    of this group-by on Spark's slower object-hash path."""
    return _node_facts(events)


def matching_delays(events: DataFrame, collect: bool = False) -> tuple[pd.DataFrame, dict[str, Any]]:
    """(node, p99_us) per broker and the run's :func:`distribution` of ``us``, from one rollup over the
    ``match`` events (where a group-by per broker and a global aggregate were two scans and two jobs).

    ``collect``: the match events' (node, us) are collected as Arrow instead (12 bytes a match) and
    :func:`local_matching_delays` takes the quantiles, in less time than the rollup."""
    matches = of(events, contract.MATCH)
    if collect:
        return local_matching_delays(matches.select("node", "us").toArrow())
    rows = cast(
        pd.DataFrame,
        matches.rollup("node").agg(F.grouping("node").alias("all"), *dist_aggs("us")).toPandas(),
    )
    rows["us_q"] = [None if q is None else list(q) for q in rows["us_q"]]
    every = rows[rows["all"] == 1]  # none when the run matched nothing
    run = dist_of(every.iloc[0], "us") if len(every) else dist_from_quantiles(0, None, [], None)
    per_broker = rows[rows["all"] == 0]
    at = SUMMARY_QUANTILES.index(0.99)
    p99 = [None if q is None else q[at] for q in per_broker["us_q"]]
    per_node = per_broker["node"].to_numpy()
    return pd.DataFrame({"node": per_node, "p99_us": pd.array(p99, "float64")}), run


def local_matching_delays(matches: pa.Table) -> tuple[pd.DataFrame, dict[str, Any]]:
    """:func:`matching_delays` of collected (node, us) match rows, each quantile by rank
    (:func:`rank_quantiles`: Spark's figure below :data:`EXACT_ROWS` values, the exact one it
    approximates beyond). A broker whose matches carry no ``us`` has a null p99, as in Spark."""
    nodes = matches.column("node").combine_chunks().dictionary_encode()
    codes = nodes.indices.fill_null(len(nodes.dictionary)).to_numpy()
    us = matches.column("us").to_numpy()
    order = np.argsort(codes, kind="stable")
    names = [*nodes.dictionary.to_pylist(), None]
    counts = np.bincount(codes, minlength=len(names))
    p99: list[float | None] = []
    seen: list[str | None] = []
    for name, part in zip(names, np.split(us[order], np.cumsum(counts)[:-1]), strict=True):
        if len(part):
            seen.append(name)
            p99.append(rank_quantiles(part[~np.isnan(part)], (0.99,))[0])
    per_broker = pd.DataFrame({"node": pd.array(seen, object), "p99_us": pd.array(p99, "float64")})
    return per_broker, local_distribution(pd.Series(us, dtype="float64"))


def _node_facts(events: DataFrame) -> pd.DataFrame:
    is_in = F.coalesce(F.col("link"), F.lit("")) == ""
    return cast(
        pd.DataFrame,
        of(events, *NODE_EVENTS)
        .groupBy("node", "ev", F.when(_ev(contract.DROP), F.col("reason")).alias("reason"))
        .agg(
            F.count("*").alias("n"),
            F.count(F.when(to_broker(), 1)).alias("to_broker"),
            F.count(F.when(to_broker() & F.coalesce(F.col("dynamic"), F.lit(False)), 1)).alias("dynamic"),
            F.mean("us").alias("mean_us"),
            F.max("us").alias("max_us"),
            F.mean("n").alias("mean_matched"),
            F.count("steps").alias("with_steps"),
            F.max(F.when(~is_in, F.col("len"))).alias("max_out_len"),
            F.max(F.when(is_in, input_longest())).alias("max_in_len"),
            F.max("size").alias("max_size"),
            F.max_by("size", "ts_ns").alias("final_size"),
            F.min("ts_ns").alias("t_min"),
            F.max("ts_ns").alias("t_max"),
        )
        .toPandas(),
    )


def _rows(facts: pd.DataFrame, ev: str) -> pd.DataFrame:
    return facts[facts["ev"] == ev].sort_values("node", kind="stable").reset_index(drop=True)


def matching_per_broker(facts: pd.DataFrame, p99: pd.DataFrame) -> pd.DataFrame:
    """Per broker: matchings, mean/p99/max matching delay (µs), mean match-set size; ``p99`` is
    :func:`matching_delays`' per-broker table."""
    m = _rows(facts, contract.MATCH).merge(p99, on="node", how="left")
    return m[["node", "n", "mean_us", "p99_us", "max_us", "mean_matched"]].rename(columns={"n": "matches"})


def notification_ims(facts: pd.DataFrame) -> pd.DataFrame:
    """Per broker: notification copies sent to other brokers, and how many were dynamic (re-routed)."""
    m = _rows(facts, contract.NOTIF_OUT)
    m = m[m["to_broker"] > 0].reset_index(drop=True)
    return m[["node", "to_broker", "dynamic"]].rename(columns={"to_broker": "ims"})


def unsubscription_ims(facts: pd.DataFrame) -> int:
    return int(facts.loc[facts["ev"] == contract.UNSUB_OUT, "to_broker"].sum())


def queue_maxima(facts: pd.DataFrame) -> dict[str, int]:
    q = facts[facts["ev"] == contract.QUEUE]
    out, inp = q["max_out_len"].max(), q["max_in_len"].max()
    return {
        "max_output_len": int(out) if pd.notna(out) else 0,
        "max_input_len": int(inp) if pd.notna(inp) else 0,
    }


def hrp_target_queue_mean(events: DataFrame, publications: DataFrame) -> float | None:
    """OctopiS §7's burst queue figure: "the average value of [the queue length] of target links at
    the brokers in routing paths of notifications from the HRP". The target links are those a copy of
    an HRP notification left on (``notif_out``); the mean is over their sampled output-queue lengths
    from the first such copy to the last. None without an HRP notification sent on a link."""
    hrp = publications.where(F.col("publisher") == contract.HRP_CLIENT).select("pub_id")
    outs = of(events, contract.NOTIF_OUT).join(F.broadcast(hrp), "pub_id").select("node", "link", "ts_ns")
    outs = outs.cache()
    span = outs.agg(F.min("ts_ns").alias("first"), F.max("ts_ns").alias("last")).first()
    if span is None or span["first"] is None:
        outs.unpersist()
        return None
    links = outs.select("node", "link").distinct()
    queues = of(events, contract.QUEUE).where(F.col("ts_ns").between(span["first"], span["last"]))
    row = queues.join(F.broadcast(links), ["node", "link"]).agg(F.avg("len").alias("mean")).first()
    outs.unpersist()
    return None if row is None or row["mean"] is None else float(row["mean"])


def table_sizes(facts: pd.DataFrame) -> pd.DataFrame:
    """Per broker: the largest and the last sampled routing-table size."""
    return _rows(facts, contract.TABLE)[["node", "max_size", "final_size"]]


def drops(facts: pd.DataFrame) -> dict[str, int]:
    d = facts[facts["ev"] == contract.DROP]
    out: dict[str, int] = {}
    for reason, n in zip(d["reason"], d["n"], strict=True):
        key = str(None if pd.isna(reason) else reason)
        out[key] = out.get(key, 0) + int(n)
    return out


def load_per_broker(facts: pd.DataFrame, brokers: Sequence[str]) -> pd.DataFrame:
    """Per broker: count of each broker event, and ``messages`` = all messages in and out.

    Brokers from the topology that logged nothing appear with zeros, so the distribution
    is over the whole overlay.
    """
    counts = facts[facts["ev"].isin(LOAD_EVENTS)].groupby(["node", "ev"])["n"].sum().unstack("ev")
    pivot = counts.reindex(columns=list(LOAD_EVENTS))
    pivot = pivot.reindex(sorted(set(brokers) | set(pivot.index))).fillna(0).astype("int64")
    pivot.index.name = "node"
    pivot.columns.name = None
    pivot["messages"] = pivot[[c for c in LOAD_EVENTS if c.endswith(("_in", "_out"))]].sum(axis=1)
    return pivot.reset_index()


def load_balance(load: pd.DataFrame) -> dict[str, float]:
    """Spread of per-broker messages: coefficient of variation and max/mean (1.0 = perfectly even)."""
    m = load["messages"].astype(float)
    mean = float(m.mean()) if len(m) else 0.0
    if mean == 0:
        return {"mean_messages": 0.0, "cv": 0.0, "max_over_mean": 0.0}
    return {"mean_messages": mean, "cv": float(m.std(ddof=0) / mean), "max_over_mean": float(m.max() / mean)}


def sorted_as_spark(rows: Any, keys: list[str]) -> pd.DataFrame:
    """Collected rows ordered as Spark's ``orderBy(*keys)`` orders them (nulls first), indexed 0..n-1: a
    bounded result is sorted in pandas, where Spark's sort costs a sampling job and a shuffle more."""
    frame = cast(pd.DataFrame, rows)
    return frame.sort_values(keys, na_position="first", kind="stable").reset_index(drop=True)


# --- publications and deliveries -------------------------------------------------------------


def publication_times(events: DataFrame, publications: DataFrame | None) -> DataFrame:
    """pub_id -> intended_ns, sent_ns: from the client ``publish`` events, else the workload file; and
    hrp_first_ns, hrp_last_ns: its workload lines' intended times when the high-rate publisher
    (``contract.HRP_CLIENT``) sent it, so that the burst is one more aggregate of these rows, not a
    query of its own.

    Both sources in one group-by of their union: one shuffle, where a group-by of each and a join of
    the two make two.
    """
    ev = of(events, contract.PUBLISH).select(
        "pub_id",
        F.col("intended_ns").alias("i_ev"),
        F.coalesce(F.col("sent_ns"), F.col("ts_ns")).alias("s_ev"),
    )
    if publications is not None:
        hrp = F.col("publisher") == contract.HRP_CLIENT
        wl = publications.select(
            "pub_id",
            F.col("intended_ns").alias("i_wl"),
            F.col("ts_ns").alias("s_wl"),
            F.when(hrp, F.col("intended_ns")).alias("i_hrp"),
        )
        ev = ev.unionByName(wl, allowMissingColumns=True)
    else:
        ev = ev.withColumns({c: F.lit(None).cast("long") for c in ("i_wl", "s_wl", "i_hrp")})
    firsts = ev.groupBy("pub_id").agg(
        *[F.min(c).alias(c) for c in ("i_ev", "s_ev", "i_wl", "s_wl")],
        F.min("i_hrp").alias("hrp_first_ns"),
        F.max("i_hrp").alias("hrp_last_ns"),
    )
    return firsts.select(
        "pub_id",
        F.coalesce("i_ev", "i_wl").alias("intended_ns"),
        F.coalesce("s_ev", "s_wl").alias("sent_ns"),
        "hrp_first_ns",
        "hrp_last_ns",
    )


def deliveries(events: DataFrame, pub_times: DataFrame) -> DataFrame:
    """One row per client ``receive``: delay from intended publish time and from actual send."""
    recv = of(events, contract.RECEIVE).select(
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


DELAY_COLUMNS = ("delay_ms", "send_delay_ms")


def delivery_delays(deliv: DataFrame) -> tuple[dict[str, Any], dict[str, list[tuple[float, float]]]]:
    """Both delays in one action: their distributions with the fraction under 1 s, and CDF points.

    Returns ({column: distribution}, {column: [(quantile, value), ...]}).
    """
    dists, curves, _ = delivery_stats(deliv, -1)
    return dists, curves


def delivery_stats(
    deliv: DataFrame, max_hops: int
) -> tuple[dict[str, Any], dict[str, list[tuple[float, float]]], pd.DataFrame | None]:
    """:func:`delivery_delays` and the hop counts of :func:`hops_distribution` in one action.

    The hops are counted for 0..``max_hops`` (a bound the caller knows, such as the brokers); None
    for the hops when a delivery's hop count lies outside it, so the caller counts them apart.
    """
    qs = tuple(sorted(set(SUMMARY_QUANTILES) | set(CDF_QUANTILES)))
    aggs = [a for c in DELAY_COLUMNS for a in dist_aggs(c, qs)]
    aggs += [F.avg((F.col(c) < 1000).cast("double")).alias(f"{c}_u1") for c in DELAY_COLUMNS]
    aggs += [F.min("hops").alias("hops_min"), F.max("hops").alias("hops_max")]
    aggs += [F.expr(f"count_if(hops = {k}) AS hops_{k}") for k in range(max_hops + 1)]  # 3 JVM calls each
    row = deliv.agg(*aggs).first()
    assert row is not None
    hops = None
    if row["hops_max"] is None or (row["hops_min"] >= 0 and row["hops_max"] <= max_hops):
        seen = [(k, row[f"hops_{k}"]) for k in range(max_hops + 1) if row[f"hops_{k}"]]
        hops = pd.DataFrame(
            {
                "hops": pd.array([k for k, _ in seen], "int64"),
                "count": pd.array([n for _, n in seen], "int64"),
            }
        )
    dists: dict[str, Any] = {}
    curves: dict[str, list[tuple[float, float]]] = {}
    for c in DELAY_COLUMNS:
        d = dist_of(row, c, qs)
        d["under_1s"] = float(row[f"{c}_u1"]) if row[f"{c}_u1"] is not None else 0.0
        dists[c] = d
        values = dict(zip(qs, row[f"{c}_q"] or [], strict=False))
        curves[c] = [(q, float(values[q])) for q in CDF_QUANTILES if values.get(q) is not None]
    return dists, curves, hops


def local_delivery_stats(
    rows: pd.DataFrame,
) -> tuple[dict[str, Any], dict[str, list[tuple[float, float]]], pd.DataFrame]:
    """:func:`delivery_stats` of collected deliveries (``delay_ms``, ``send_delay_ms``, ``hops``): each
    quantile by rank (:func:`rank_quantiles`), which is Spark's ``percentile_approx`` below
    :data:`EXACT_ROWS` values and, beyond, the exact value it approximates. Every hop count is counted,
    so the hops are never None."""
    qs = tuple(sorted(set(SUMMARY_QUANTILES) | set(CDF_QUANTILES)))
    dists: dict[str, Any] = {}
    curves: dict[str, list[tuple[float, float]]] = {}
    for c in DELAY_COLUMNS:
        d, values = _local_dist(rows[c], qs)
        xs = rows[c].dropna()
        d["under_1s"] = float((xs < 1000).mean()) if len(xs) else 0.0
        dists[c] = d
        curves[c] = [(q, float(v)) for q in CDF_QUANTILES if (v := values[q]) is not None]
    counts = rows["hops"].dropna().astype("int64").value_counts().sort_index()
    hops = pd.DataFrame(
        {"hops": pd.array(counts.index, "int64"), "count": pd.array(counts.to_numpy(), "int64")}
    )
    return dists, curves, hops


def hops_distribution(deliv: DataFrame) -> pd.DataFrame:
    """hops -> deliveries (broker-to-broker hops the delivered copy took)."""
    return cast(
        pd.DataFrame,
        deliv.where(F.col("hops").isNotNull()).groupBy("hops").count().orderBy("hops").toPandas(),
    )


def burst_from_spec(spec: Spec, first_intended_ns: int) -> tuple[int, int] | None:
    """The burst the spec's ``workload.hrp`` asks for, counted from the first publication."""
    hrp = spec.workload.hrp
    if hrp is None:
        return None
    rate = hrp.rate_per_minute / spec.workload.time_scale
    start = first_intended_ns + int(hrp.start_s * 1e9)
    return start, start + int(hrp.notifications / rate * 60e9)


STABILITY_COLUMNS = ["window", "start_ns", "end_ns", "count", "max_delay_ms", "mean_delay_ms"]


STABILITY_ORDER = ["recv_ns", "pub_id", "sub_id"]  # receive order; ties broken by the pair


def stability_curve(deliv: DataFrame, window: int) -> pd.DataFrame:
    """Max delay of each consecutive window of ``window`` receives, in receive order (OctopiS Fig. 11),
    numbered in Spark, for more receives than a driver should hold (:func:`stability_windows` cuts
    collected ones). The global index is built without a single-partition window: after a range sort,
    each row's index is its partition's offset plus its position inside the partition.
    """
    _check_window(window)
    rows = deliv.where(F.col("delay_ms").isNotNull()).select("recv_ns", "delay_ms", "pub_id", "sub_id")
    ordered = (
        rows.orderBy(*STABILITY_ORDER)
        .withColumn("pid", F.spark_partition_id())
        .withColumn("mid", F.monotonically_increasing_id())
        .persist()
    )
    try:
        counts = ordered.groupBy("pid").agg(F.count("*").alias("n")).orderBy("pid").collect()
        if not counts:
            return pd.DataFrame(columns=STABILITY_COLUMNS)
        offset = F.lit(0)
        acc = 0
        for r in counts:
            offset = F.when(F.col("pid") == int(r["pid"]), F.lit(acc)).otherwise(offset)
            acc += int(r["n"])
        idx = offset + F.col("mid") - F.shiftleft(F.col("pid").cast("long"), 33)
        return cast(
            pd.DataFrame,
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
            .toPandas(),
        )
    finally:
        ordered.unpersist()


def _check_window(window: int) -> None:
    if window < 1:
        raise ValueError(f"stability window must be >= 1, got {window}")


RECEIVE_COLUMNS = ["recv_ns", *DELAY_COLUMNS, "hops"]


def collect_receives(deliv: DataFrame) -> pa.Table:
    """Every delivery's :data:`RECEIVE_COLUMNS` and pair, collected once as Arrow: put in receive order
    (:func:`in_receive_order`, the pair breaking ties) for the delay statistics
    (:func:`local_delivery_stats`) and the stability windows (:func:`stability_windows`), and the pairs
    for the oracle's check. Sorted in the driver: a Spark sort costs a sampling job and a shuffle more."""
    return deliv.select(*RECEIVE_COLUMNS, *STABILITY_ORDER[1:]).toArrow()


def in_receive_order(rows: pa.Table) -> pd.DataFrame:
    """Collected receives in the order Spark sorts them (:data:`STABILITY_ORDER`, nulls first, strings by
    their UTF-8 bytes), without the pair's columns."""
    order = pc.sort_indices(rows, sort_keys=[(k, "ascending", "at_start") for k in STABILITY_ORDER])
    return rows.drop_columns(STABILITY_ORDER[1:]).take(order).to_pandas()


def stability_windows(ordered: pd.DataFrame, window: int) -> pd.DataFrame:
    """:func:`stability_curve` of receives collected in receive order (``recv_ns``, ``delay_ms``): the
    receives with a delay, cut into windows of ``window``."""
    _check_window(window)
    timed = ordered.loc[ordered["delay_ms"].notna(), ["recv_ns", "delay_ms"]]
    return _windows(timed.reset_index(drop=True), window)


def _windows(ordered: pd.DataFrame, window: int) -> pd.DataFrame:
    """Receives in receive order (``recv_ns``, ``delay_ms``, index 0..n-1) cut into windows of ``window``."""
    if not len(ordered):
        return pd.DataFrame(columns=STABILITY_COLUMNS)
    ordered = ordered.assign(window=ordered.index // window)
    curve = ordered.groupby("window", sort=True).agg(
        start_ns=("recv_ns", "min"),
        end_ns=("recv_ns", "max"),
        count=("recv_ns", "size"),
        max_delay_ms=("delay_ms", "max"),
        mean_delay_ms=("delay_ms", "mean"),
    )
    return curve.reset_index()[STABILITY_COLUMNS].astype({"window": "int64", "count": "int64"})
