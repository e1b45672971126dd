"""The ``peers`` section of summary.json (a run of ``topology: {kind: peers}``, Vinifera, docs/design.md §10):
the paper's figures from the peers' event logs, as DataFrame expressions.

The oracle: a peer is interested in an event when its logged subscription matches the event's
values and it had not failed (``faults.jsonl``: a peer failed at round f is not interested in events
of round f on). Then overhead (share of ``ev_in`` at uninterested peers), path length and its
delivery-tree part (first delivery per peer and event), hit ratio (overall and per round), missed,
duplicate and dropped (capacity) messages, and the load per peer (share of events it received
without interest: CDF, idle share, maximum). The definitions are :mod:`scotbed.vinifera.metrics`'s,
which the simulator computes on its own records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from scotbed import contract
from scotbed.analysis.context import RunData
from scotbed.analysis.rundir import RunDir
from scotbed.vinifera.metrics import CDF_POINTS

#: the peers' log fields the section reads (``ranges`` and ``values`` kept as their JSON text)
PEER_DDL = (
    "ts_ns BIGINT, node STRING, ev STRING, pub_id BIGINT, hops BIGINT, tree_hops BIGINT, "
    "round BIGINT, ranges STRING, `values` STRING"
)
PAIRS = "array<array<string>>"


@dataclass(frozen=True)
class PeersSection:
    """None (no key): not a peers run."""

    block: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any] | None:
        return self.block


def is_peers_run(run: RunDir) -> bool:
    return run.spec.topology.kind == contract.PEERS_KIND


def peers_section(d: RunData) -> PeersSection:
    if not is_peers_run(d.run):
        return PeersSection()
    events = d.spark.read.schema(PEER_DDL).json(d.run.event_files())
    events = d.keep(events.where(F.col("node").startswith(contract.PEER_PREFIX)))
    block, per_peer = figures(d.spark, events, failed_rounds(d.run.path))
    d.tables["peer_load"] = per_peer
    d.tables["peer_hit_ratio"] = pd.DataFrame(
        [(int(r), h) for r, h in block["hit_ratio_by_round"].items()], columns=["round", "hit_ratio"]
    )
    return PeersSection(block)


def failed_rounds(run_dir: Path) -> dict[int, int]:
    """Peer name -> the round of its failure, from the run's fault record."""
    path = run_dir / contract.FAULTS
    lines = path.read_text().splitlines() if path.exists() else []
    faults = (json.loads(line) for line in lines if line.strip())
    return {contract.peer_name(f["peer"]): int(f["round"]) for f in faults if f.get("kind") == "kill"}


def _name() -> Column:
    return F.regexp_replace("node", f"^{contract.PEER_PREFIX}", "").cast("long").alias("peer")


def interested(spark: SparkSession, events: DataFrame, failed: dict[int, int]) -> tuple[DataFrame, DataFrame]:
    """(the published events: pub_id, round; the oracle: pub_id, peer for every interested peer)."""
    pubs = events.where(F.col("ev") == contract.PUBLISH)
    pubs = pubs.select(
        "pub_id",
        "round",
        F.map_from_entries(
            F.transform(F.from_json("values", PAIRS), lambda p: F.struct(p[0], p[1].cast("double")))
        ).alias("vals"),
    ).dropDuplicates(["pub_id"])
    last = Window.partitionBy("node").orderBy(F.col("ts_ns").desc())
    subs = (
        events.where((F.col("ev") == contract.SUBSCRIBE) & F.col("ranges").isNotNull())
        .withColumn("i", F.row_number().over(last))
        .where(F.col("i") == 1)
        .select(_name(), F.from_json("ranges", PAIRS).alias("r"))
    )
    pieces = subs.select("peer", F.size("r").alias("n"), F.explode_outer("r").alias("piece"))
    fails = spark.createDataFrame(list(failed.items()) or [(-1, 0)], "peer long, failed long")
    v = F.col("vals")[F.col("piece")[0]]
    ok = v.isNotNull() & (F.col("piece")[1].cast("double") <= v) & (v <= F.col("piece")[2].cast("double"))
    alive = F.coalesce(F.col("failed"), F.col("round") + 1) > F.col("round")
    oracle = (
        pubs.crossJoin(pieces.join(fails, "peer", "left"))
        .where(alive)
        .groupBy("pub_id", "peer", "n")
        .agg(F.sum(F.when(ok, 1).otherwise(0)).alias("hit"))
        .where(F.col("hit") == F.col("n"))
        .select("pub_id", "peer", F.lit(True).alias("wanted"))
    )
    return pubs.select("pub_id", "round"), oracle


def figures(
    spark: SparkSession, events: DataFrame, failed: dict[int, int]
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The section's block and the load per peer (a table of the analysis)."""
    pubs, oracle = interested(spark, events, failed)
    pubs, oracle = pubs.persist(), oracle.persist()
    of = events.join(pubs.select("pub_id"), "pub_id", "left_semi")
    n_events = pubs.count()
    received = of.where(F.col("ev") == contract.EV_IN).select("pub_id", _name())
    received = received.join(oracle, ["pub_id", "peer"], "left")
    traffic = _row(
        received.agg(F.count("*"), F.sum(F.when(F.col("wanted").isNull(), 1).otherwise(0)).alias("wasted"))
    )
    first = Window.partitionBy("pub_id", "peer").orderBy("ts_ns")
    deliver = of.where(F.col("ev") == contract.DELIVER).select(
        "pub_id", _name(), "hops", "tree_hops", "ts_ns"
    )
    firsts = deliver.withColumn("i", F.row_number().over(first)).where(F.col("i") == 1)
    paths = _row(firsts.agg(F.count("*"), F.avg("hops"), F.avg("tree_hops")))
    hits = oracle.join(firsts.select("pub_id", "peer", F.lit(1).alias("got")), ["pub_id", "peer"], "left")
    by_round = (
        pubs.join(hits, "pub_id", "left")
        .groupBy("round")
        .agg(F.count("wanted").alias("want"), F.count("got").alias("got"))
        .orderBy("round")
        .collect()
    )
    want, got = sum(r["want"] for r in by_round), sum(r["got"] for r in by_round)
    n_dropped = of.where(F.col("ev") == contract.EV_DROP).count()
    names = events.select(_name()).distinct()
    idle = received.where(F.col("wanted").isNull()).select("pub_id", "peer").distinct()
    load = names.join(idle.groupBy("peer").count(), "peer", "left").select(
        "peer",
        (F.coalesce(F.col("count"), F.lit(0)) / F.lit(n_events) if n_events else F.lit(0.0)).alias("load"),
    )
    shares = _row(
        load.agg(
            F.avg((F.col("load") == 0).cast("int")),
            F.max("load"),
            *(F.avg((F.col("load") <= p).cast("int")) for p in CDF_POINTS),
        )
    )
    per_peer = cast(pd.DataFrame, load.orderBy("peer").toPandas())
    pubs.unpersist()
    oracle.unpersist()
    block = {
        "events": n_events,
        "hit_ratio": _ratio(got, want),
        "hit_ratio_by_round": {int(r["round"]): _ratio(r["got"], r["want"]) for r in by_round},
        "missed": want - got,
        "extra_deliveries": deliver.count() - int(paths[0]),
        "dropped": n_dropped,
        "overhead": traffic[1] / traffic[0] if traffic[0] else 0.0,
        "path_length": float(paths[1] or 0.0),
        "tree_depth": float(paths[2] or 0.0),
        "idle_share": float(shares[0] or 0.0),
        "max_load": float(shares[1] or 0.0),
        "load_cdf": {p: float(v or 0.0) for p, v in zip(CDF_POINTS, shares[2:], strict=True)},
    }
    return block, per_peer


def _ratio(got: int, want: int) -> float:
    return got / want if want else 1.0


def _row(df: DataFrame) -> list[Any]:
    row = df.first()
    assert row is not None  # a global aggregate has one row
    return [0 if v is None else v for v in row]


#: the report's plots of a peers run: title -> (file under analysis/plots/, table, function of
#: :mod:`.plots`, imported when drawn: matplotlib is not loaded by an analysis's import)
PLOTS = {
    "Load distribution (CDF over peers)": ("peer_load_cdf.png", "peer_load", "load_cdf"),
    "Hit ratio per round": ("peer_hit_ratio.png", "peer_hit_ratio", "hit_ratio"),
}


def analyse(run_dir: str | Path, spark_master: str | None = None) -> tuple[dict[str, Any], dict[str, Path]]:
    """The ``peers`` block of one peers run (what a peers run writes into its summary) and its plots
    by title, in the active or shared SparkSession, else in one this call starts and stops."""
    from scotbed.analysis.session import get_session, is_shared

    run = RunDir.open(run_dir)
    own = SparkSession.getActiveSession() is None and not is_shared()
    session = get_session(spark_master, log=run.path / contract.SPARK_LOG)
    data = RunData(session, run)
    try:
        block = peers_section(data).block
        for name, df in data.tables.items():
            df.to_parquet(run.analysis_dir / f"{name}.parquet", index=False)
    finally:
        data.close()
        if own:
            session.stop()
    if block is None:
        raise ValueError(f"{run.path}: not a peers run")
    from scotbed.vinifera.analysis import plots

    made = {
        title: getattr(plots, plot)(data.tables[t], run.plots_dir / f)
        for title, (f, t, plot) in PLOTS.items()
    }
    return block, made
