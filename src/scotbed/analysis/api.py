"""``analyze(run_dir)``: read a run directory, check correctness, compute metrics, write the results.

Writes ``analysis/summary.json``, one Parquet table per metric under
``analysis/`` (big per-delivery tables as Spark Parquet directories, small
ones as single files), PNG plots under ``analysis/plots/`` and a
self-contained ``report.html`` at the run directory's top.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, cast

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from scotbed import java
from scotbed.analysis import metrics as M
from scotbed.analysis import oracle, plots, report, unreadable
from scotbed.analysis.events import read_publications, read_raw, valid
from scotbed.analysis.rundir import RunDir
from scotbed.analysis.session import get_session
from scotbed.analysis.stats import time_to_stabilise

SCHEMA_VERSION = 1
FIRST_N = 10


def analyze(
    run_dir: str | Path,
    spark_master: str | None = None,
    *,
    spark: SparkSession | None = None,
    settle_ms: float | None = None,
    engine: str | None = None,
    first_n: int = FIRST_N,
) -> dict[str, Any]:
    """Analyse one run; returns the summary (also written to ``analysis/summary.json``).

    ``settle_ms`` is the oracle's settle bound (default: the spec's ``analysis.settle_ms``, else 0:
    only the logged propagation decides the transition windows). ``engine`` picks the matching
    engine of the oracle (default ``counting``, else ``naive``: every engine gives the same match
    sets, so this is a speed choice).
    A session this call starts is stopped at the end; a given or already active one is kept.
    """
    run = RunDir.open(run_dir)
    own = spark is None and SparkSession.getActiveSession() is None
    session = spark or get_session(spark_master)
    try:
        return _analyze(session, run, settle_ms, engine, first_n)
    finally:
        if own:
            session.stop()


def _analyze(
    spark: SparkSession, run: RunDir, settle_ms: float | None, engine: str | None, first_n: int
) -> dict[str, Any]:
    started = time.monotonic()
    stages: dict[str, float] = {}
    last = [started]

    def stage(name: str) -> None:
        now = time.monotonic()
        stages[name] = round(now - last[0], 3)
        last[0] = now

    out = run.analysis_dir
    out.mkdir(parents=True, exist_ok=True)
    run.plots_dir.mkdir(parents=True, exist_ok=True)
    cached: list[DataFrame] = []

    def keep(df: DataFrame) -> DataFrame:
        cached.append(df.persist(StorageLevel.MEMORY_AND_DISK))
        return df

    raw = keep(read_raw(spark, run.event_files()))
    counts = raw.agg(F.sum(valid().cast("long")), F.count("*")).first()
    n_events = int((counts[0] if counts else 0) or 0)
    n_malformed = int(counts[1] if counts else 0) - n_events
    recovered, unreadable_lines = unreadable.receives(raw.where(~valid()))
    events = raw.where(valid())
    pubs = read_publications(spark, run)
    pub_times = keep(M.publication_times(events, pubs))
    n_published = pub_times.count()

    stage("load")
    # subscriptions
    subs_sdf = keep(M.subscription_delays(events))
    subs = cast(pd.DataFrame, subs_sdf.toPandas())
    sub_ims = int(subs["ims"].sum()) if len(subs) else 0
    subscriptions = {
        "count": len(subs),
        "ims_total": sub_ims,
        "ims_per_subscription": sub_ims / len(subs) if len(subs) else 0.0,
        "unsub_ims_total": M.unsubscription_ims(events),
        "delay_ms": M.distribution(subs_sdf, "delay_ms"),
    }

    stage("subscriptions")
    # correctness
    deliv = keep(M.deliveries(events, pub_times))
    spec_analysis = run.spec.get("analysis") or {}
    settle = float(settle_ms if settle_ms is not None else spec_analysis.get("settle_ms", 0.0))
    engine_name = oracle.pick_engine(engine)
    expected: DataFrame | None = None
    if run.publications_file.exists() and run.subscriptions_file.exists():
        eps = oracle.episodes(
            run.subscription_ops(),
            {r.sub_id: int(r.stored_ns) for r in subs.itertuples() if pd.notna(r.stored_ns)},
            M.last_arrivals(events, "unsub_in"),
            M.first_client_times(events, "subscribe"),
            M.first_client_times(events, "unsubscribe"),
            settle_ns=int(settle * 1e6),
        )
        expected = keep(oracle.expected_deliveries(spark, str(run.publications_file), eps, engine_name))
        correctness, pairs = oracle.check(expected, deliv, first_n)
        unreadable.excuse(correctness, pairs, recovered)
        cached.append(pairs)
        offenders = pairs.where(F.col("missing") | F.col("false_positive") | F.col("duplicate"))
        offenders.write.mode("overwrite").parquet(str(out / "correctness_offenders.parquet"))
    else:
        correctness = {"ok": None, "reason": "workload/subscriptions.jsonl or publications.jsonl missing"}
    correctness.update({"engine": engine_name, "settle_ms": settle})

    stage("oracle")
    # notifications
    ndelay = M.notification_delay(deliv)
    match_dist = M.distribution(events.where(F.col("ev") == "match"), "us")
    nims = M.notification_ims(events)
    hops = M.hops_distribution(deliv)
    n_deliv = int(hops["count"].sum()) if len(hops) else 0
    notifications = {
        "published": n_published,
        "expected_deliveries": correctness.get("expected_deliveries", 0),
        "delivered": correctness["delivered"] if "delivered" in correctness else deliv.count(),
        "missing": correctness.get("missing", 0),
        "duplicates": correctness.get("duplicates", 0),
        "false_positives": correctness.get("false_positives", 0),
        "in_transition": correctness.get("in_transition", 0),
        "ims_total": int(nims["ims"].sum()) if len(nims) else 0,
        "dynamic_copies": int(nims["dynamic"].sum()) if len(nims) else 0,
        "delay_ms": ndelay["delay_ms"],
        "send_delay_ms": ndelay["send_delay_ms"],
        "matching_us": {"mean": match_dist["mean"], "p99": match_dist["p99"], "max": match_dist["max"]},
        "hops": {
            "mean": float((hops["hops"] * hops["count"]).sum() / n_deliv) if n_deliv else 0.0,
            "max": int(hops["hops"].max()) if n_deliv else 0,
        },
    }
    cdf = {
        "intended → receive": M.quantile_curve(deliv, "delay_ms"),
        "sent → receive": M.quantile_curve(deliv, "send_delay_ms"),
    }

    stage("notifications")
    # stability
    window = run.stability_window
    curve = M.stability_curve(deliv, window)
    burst = M.burst_from_publications(pubs)
    if burst is None and n_published:
        first = pub_times.agg(F.min("intended_ns")).first()
        burst = M.burst_from_spec(run.spec, int(first[0])) if first and first[0] is not None else None
    recovery = time_to_stabilise(curve.to_dict("records"), *burst).to_json() if burst else None
    stability = {
        "window": window,
        "windows": len(curve),
        "max_window_delay_ms": float(curve["max_delay_ms"].max()) if len(curve) else 0.0,
        "burst": {"start_ns": burst[0], "end_ns": burst[1]} if burst else None,
        "recovery": recovery,
    }

    stage("stability")
    # queues, tables, load, traffic
    qseries = M.queue_series(events)
    tseries = M.table_series(events)
    tsizes = M.table_sizes(events)
    load = M.load_per_broker(events, run.broker_ids())
    tables_out: dict[str, pd.DataFrame] = {
        "subscriptions": subs,
        "matching": nims.merge(M.matching_per_broker(events), on="node", how="outer"),
        "hops": hops,
        "stability": curve,
        "queues": qseries,
        "table_series": tseries,
        "table_sizes": tsizes,
        "load": load,
        "delay_cdf": pd.DataFrame(
            [(k, q, v) for k, pts in cdf.items() for q, v in pts], columns=["series", "quantile", "delay_ms"]
        ),
    }
    traffic: dict[str, Any] = {}
    if expected is not None:
        interested = expected.select("pub_id", "broker").distinct()
        relay = M.relay_overhead(events, interested)
        fp = M.false_positive_traffic(events, interested)
        tables_out["relay"] = relay
        tables_out["false_positive_traffic"] = fp
        visits, relay_only = int(relay["visits"].sum()), int(relay["relay_only"].sum())
        fwd, fpi = int(fp["ims"].sum()), int(fp["fp_ims"].sum())
        traffic = {
            "broker_visits": visits,
            "relay_only": relay_only,
            "relay_only_fraction": relay_only / visits if visits else 0.0,
            "forwarded": fwd,
            "false_positive": fpi,
            "false_positive_fraction": fpi / fwd if fwd else 0.0,
        }

    stage("queues_load_traffic")
    deliv.write.mode("overwrite").parquet(str(out / "deliveries.parquet"))
    for name, df in tables_out.items():
        df.to_parquet(out / f"{name}.parquet", index=False)

    stage("write_tables")
    elapsed = time.monotonic() - started
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run.run_id,
        "routing": run.routing,
        "topology": run.topology_counts(),
        "events": {
            "total": n_events,
            "malformed": n_malformed,
            "files": len(run.event_files()),
            "unreadable_receive": unreadable_lines,
        },
        "subscriptions": subscriptions,
        "notifications": notifications,
        "stability": stability,
        "queues": M.queue_maxima(events),
        "tables": {
            "max_size": int(tsizes["max_size"].max()) if len(tsizes) else 0,
            "mean_final_size": float(tsizes["final_size"].mean()) if len(tsizes) else 0.0,
        },
        "traffic": traffic,
        "load": M.load_balance(load),
        "drops": M.drops(events),
        "correctness": correctness,
        "environment": {
            "spark_version": spark.version,
            "spark_master": spark.sparkContext.master,
            "java": java.describe(),
            "analysis_s": round(elapsed, 3),
            "events_per_s": round(n_events / elapsed, 1) if elapsed > 0 else None,
            "stages_s": stages,
        },
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))

    pd_dir = run.plots_dir
    made = {
        "delay_cdf": plots.delay_cdf(cdf, pd_dir / "delay_cdf.png"),
        "stability": plots.stability(curve, window, pd_dir / "stability.png", burst, recovery),
        "queues": plots.queues(qseries, pd_dir / "queues.png"),
        "table_sizes": plots.table_sizes(tseries, pd_dir / "table_sizes.png"),
        "load": plots.broker_load(load, pd_dir / "load.png"),
    }
    if run.topology:
        made["topology"] = plots.topology(run.topology, pd_dir / "topology.png")
    report.render_run(
        run.path / "report.html",
        summary,
        run.spec_text,
        made,
        {
            "Per-broker load": load,
            "Matching and notification IMs per broker": tables_out["matching"],
            "Hops per delivery": hops,
            "Routing-table size per broker": tsizes,
            **(
                {
                    "Traffic overhead per broker": tables_out["relay"].merge(
                        tables_out["false_positive_traffic"], on="node", how="outer"
                    )
                }
                if "relay" in tables_out
                else {}
            ),
        },
    )
    for df in cached:
        df.unpersist()
    return summary
