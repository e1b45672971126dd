"""``analyze(run_dir)``: read a run directory, check correctness, compute metrics, write the results.

Writes ``analysis/summary.json``, one Parquet table per metric under
``analysis/`` (big per-delivery tables as Spark Parquet directories, small
ones as single files), PNG plots under ``analysis/plots/`` and a
self-contained ``report.html`` at the run directory's top.

The summary is assembled from the section registry
(:data:`scotbed.analysis.sections.SECTIONS`); a campaign analyses all its runs
in one SparkSession (pass ``spark=``, or run inside :func:`scotbed.analysis.session.shared_session`).
"""

from __future__ import annotations

import importlib
import json
import math
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import SparkSession

from scotbed import contract, java
from scotbed.analysis import faultwindows, report
from scotbed.analysis.context import RunData, Settings, is_small
from scotbed.analysis.rundir import RunDir
from scotbed.analysis.sections import SECTIONS
from scotbed.analysis.session import SHORT_JVM_OPTIONS, SMALL_RUN_CONF, get_session, is_shared
from scotbed.analysis.summary import SCHEMA_VERSION, Section, Summary

__all__ = ["SCHEMA_VERSION", "analyze"]
PLOTTER_MODULE = "scotbed.analysis.run_plots"
FIRST_N = 10
BYTES_PER_SHUFFLE_PARTITION = 64 << 20


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
    sets, so this is a speed choice) for the publications whose values numpy cannot compare exactly;
    the rest are matched as columns (:mod:`scotbed.matching.columnar`, the same semantics, tested).
    A session this call starts is stopped at the end; a given, shared or already active one is kept.
    """
    t0 = time.monotonic()
    run = RunDir.open(run_dir)
    # matplotlib (0.4 s) is imported while the JVM starts; _analyze's own import waits for it
    threading.Thread(target=importlib.import_module, args=(PLOTTER_MODULE,), daemon=True).start()
    own = spark is None and SparkSession.getActiveSession() is None and not is_shared()
    session = spark or get_session(spark_master, java_options=java_options_for(run))
    try:
        with _sql_conf(session, _conf_for(session, run)):
            return _analyze(session, run, Settings(settle_ms, engine, first_n), t0)
    finally:
        if own:
            session.stop()


def java_options_for(run: RunDir) -> tuple[str, ...]:
    """The options of a JVM started for this run's analysis: a short-lived one's for a small run."""
    return SHORT_JVM_OPTIONS if is_small(run) else ()


def _conf_for(spark: SparkSession, run: RunDir) -> dict[str, str]:
    """The run's SQL settings: shuffle partitions scaled to the input (the cores for a small run, one
    per 64 MB of text beyond), and a small run's interpreted queries."""
    size = run.event_text_bytes()
    per_size = min(400, math.ceil(size / BYTES_PER_SHUFFLE_PARTITION))
    partitions = max(spark.sparkContext.defaultParallelism, per_size)
    return {"spark.sql.shuffle.partitions": str(partitions), **(SMALL_RUN_CONF if is_small(run) else {})}


@contextmanager
def _sql_conf(spark: SparkSession, conf: dict[str, str]) -> Iterator[None]:
    """Set ``conf`` for one analysis; a shared session gets its own settings back after it."""
    before: dict[str, str | None] = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


# Sections computed at once, in the registry's order: a small run's Spark jobs are mostly fixed costs
# (planning, scheduling, calls into the JVM), so a second job overlaps the first's. On `make demo`'s run
# (cold, 3 alternating runs each) 1 thread took 13.7-14.8 s, 2 threads 11.7-12.8 s, 3 no better.
# A section's stage is the time from the previous stage's end until its result is in.
SECTION_THREADS = 2
# The stages of an analysis that are not summary sections (whose names they must not share): the
# session's start or join, the parse of the logs, writing the small tables, the plots and the report.
SESSION_STAGE, PARSE_STAGE, TABLES_STAGE, RENDER_STAGE = "session", "parse", "write_tables", "render"


def _analyze(spark: SparkSession, run: RunDir, settings: Settings, started: float) -> dict[str, Any]:
    """The summary; ``environment.stages_s`` holds every stage from ``started`` on, so they add up to
    ``analysis_s`` (the session's start included)."""
    stages: dict[str, float] = {}
    last = [started]

    def stage(name: str) -> None:
        assert name not in stages, f"stage {name} timed twice"
        now = time.monotonic()
        stages[name] = round(now - last[0], 3)
        last[0] = now

    stage(SESSION_STAGE)
    run.plots_dir.mkdir(parents=True, exist_ok=True)
    data = RunData(spark, run, settings)
    plotter = importlib.import_module(PLOTTER_MODULE).Plotter(data)
    try:
        data.line_counts  # noqa: B018 - parse the logs once, before any section reads them
        stage(PARSE_STAGE)
        sections: dict[str, Section] = {}
        with ThreadPoolExecutor(SECTION_THREADS, thread_name_prefix="scotbed-section") as pool:
            running = [(name, pool.submit(section, data)) for name, section in SECTIONS]
            try:
                for name, result in running:
                    sections[name] = result.result()
                    stage(name)
                    plotter.done(sections)
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise
        for name, df in data.tables.items():
            df.to_parquet(run.analysis_dir / f"{name}.parquet", index=False)
        stage(TABLES_STAGE)
        made = plotter.made()
    except BaseException:
        plotter.cancel()
        raise
    finally:
        data.close()
    summary = Summary(run.run_id, run.routing, run.topology_counts(), sections)
    doc = _write(run, summary, spark, stages)
    _report(run, doc, data, made)
    stage(RENDER_STAGE)
    return _write(run, summary, spark, stages)  # again, with the render's time


def _write(run: RunDir, summary: Summary, spark: SparkSession, stages: dict[str, float]) -> dict[str, Any]:
    """``summary.json`` with the environment (the analysis's time is the sum of its stages) and the
    losses attributed to declared fault windows: the one verdict of summary.json and the report."""
    elapsed = sum(stages.values())
    n_events = int(summary.sections["events"].to_json()["total"])
    summary.environment = {
        "spark_version": spark.version,
        "spark_master": spark.sparkContext.master,
        "java": java.describe(),
        "analysis_s": round(elapsed, 3),
        "events_per_s": round(n_events / elapsed, 1) if elapsed > 0 else None,
        "stages_s": dict(stages),
    }
    doc = summary.to_json()
    faultwindows.attribute(doc, run.path)
    (run.path / contract.SUMMARY).write_text(json.dumps(doc, indent=2, default=str))
    return doc


def _report(run: RunDir, summary: dict[str, Any], data: RunData, made: dict[str, Path]) -> None:
    t, v = data.tables, data.plot_data["loop_lag"][1]
    traffic = {}
    if "relay" in t:
        traffic["Traffic overhead per broker"] = t["relay"].merge(
            t["false_positive_traffic"], on="node", how="outer"
        )
    pruning_tables = {}
    if "released_subscriptions" in t:
        pruning_tables["Released subscription messages per broker (from the first unsubscription)"] = t[
            "released_subscriptions"
        ]
    report.render_run(
        run.path / contract.REPORT,
        summary,
        run.spec_text,
        made,
        {
            "Per-broker load": t["load"],
            "Matching and notification IMs per broker": t["matching"],
            **data.plot_data.get("script_tables", {}),
            "Hops per delivery": t["hops"],
            "Routing-table size per broker": t["table_sizes"],
            **({"Brokers whose loop lagged": pd.DataFrame(v.brokers)} if v.brokers else {}),
            **traffic,
            **pruning_tables,
        },
    )
