"""One run's analysis on a running session: the logs parsed once, the summary's sections, the tables,
the plots and the report (:func:`analyze`, called by :func:`scotbed.analysis.api.analyze`).

This module holds the analysis's heavy imports (pandas, pyarrow, every section): the API imports it
while Spark's JVM starts.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import SparkSession

from scotbed import contract, java
from scotbed.analysis import faultwindows, report
from scotbed.analysis.context import RunData, Settings
from scotbed.analysis.rundir import RunDir
from scotbed.analysis.sections import SECTIONS
from scotbed.analysis.summary import Section, Summary

__all__ = ["Settings", "analyze"]

# Sections computed at once, in the registry's order: a small run's Spark jobs are mostly fixed costs
# (planning, scheduling, calls into the JVM), so a second job overlaps the first's. On `make demo`'s run
# (cold, 3 alternating runs each) 1 thread took 13.7-14.8 s, 2 threads 11.7-12.8 s, 3 no better.
# A section's stage is the time from the previous stage's end until its result is in.
SECTION_THREADS = 2
# The stages of an analysis that are not summary sections (whose names they must not share): the
# session's start or join, the parse of the logs, writing the small tables, the plots and the report.
SESSION_STAGE, PARSE_STAGE, TABLES_STAGE, RENDER_STAGE = "session", "parse", "write_tables", "render"


def analyze(spark: SparkSession, run: RunDir, settings: Settings, started: float) -> dict[str, Any]:
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
    from scotbed.analysis.run_plots import Plotter  # matplotlib: api imports it while the JVM starts

    plotter = Plotter(data)
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
        "java": running_java(spark),
        "analysis_s": round(elapsed, 3),
        "events_per_s": round(n_events / elapsed, 1) if elapsed > 0 else None,
        "stages_s": dict(stages),
    }
    doc = summary.to_json()
    faultwindows.attribute(doc, run.path)
    (run.out_dir / contract.SUMMARY).write_text(json.dumps(doc, indent=2, default=str))
    return doc


def running_java(spark: SparkSession) -> str:
    """The driver JVM's JDK, asked of the JVM itself (the JDK a run's size chose, or spark-submit's)."""
    system = spark.sparkContext._jvm.java.lang.System  # type: ignore[union-attr]
    return java.describe(Path(system.getProperty("java.home")), system.getProperty("java.version"))


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
        run.out_dir / contract.REPORT,
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
