"""``analyze(run_dir)``: read a run directory, check correctness, compute metrics, write the results.

Writes ``analysis/summary.json``, one Parquet table per metric under
``analysis/`` (big per-delivery tables as Spark Parquet directories, small
ones as single files), PNG plots under ``analysis/plots/`` and a
self-contained ``report.html`` at the run directory's top.

The summary is assembled from the section registry
(:data:`scotbed.analysis.sections.SECTIONS`); a campaign analyses all its runs
in one SparkSession (pass ``spark=``, or run inside :func:`scotbed.analysis.session.shared_session`).
This module imports little, so that Spark's JVM starts at once; the analysis's own code
(:mod:`scotbed.analysis.pipeline`) and matplotlib are imported while it starts.
"""

from __future__ import annotations

import importlib
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scotbed import contract
from scotbed.analysis.rundir import RunDir
from scotbed.analysis.session import LONG_JVM, SHORT_JVM, SMALL_RUN_CONF, Jvm, get_session, is_shared
from scotbed.analysis.size import is_small, wants_short_jvm
from scotbed.analysis.summary import SCHEMA_VERSION

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SCHEMA_VERSION", "analyze"]
PIPELINE_MODULE = "scotbed.analysis.pipeline"
PLOTTER_MODULE = "scotbed.analysis.run_plots"  # matplotlib: 0.4 s
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
    jvm: Jvm | None = None,
    verbose: bool = False,
    out: str | Path | None = None,
) -> dict[str, Any]:
    """Analyse one run; returns the summary (also written to ``analysis/summary.json``).

    ``settle_ms`` is the oracle's settle bound (default: the spec's ``analysis.settle_ms``, else 0:
    only the logged propagation decides the transition windows). ``engine`` picks the matching
    engine of the oracle (default ``counting``, else ``naive``: every engine gives the same match
    sets, so this is a speed choice) for the publications whose values numpy cannot compare exactly;
    the rest are matched as columns (:mod:`scotbed.matching.columnar`, the same semantics, tested).
    A session this call starts (its JVM ``jvm``, by default :func:`jvm_for` the run's) is stopped at the
    end; a given, shared or already active one is kept. A JVM this call starts writes its output to
    ``analysis/spark.log``, or with ``verbose`` to this process's stderr. ``out``: the folder that
    gets ``analysis/`` and ``report.html`` instead of the run directory (which is then only read).
    """
    from pyspark.sql import SparkSession

    t0 = time.monotonic()
    run = RunDir.open(run_dir, out)
    threading.Thread(target=import_code, daemon=True).start()  # while the JVM starts
    own = spark is None and SparkSession.getActiveSession() is None and not is_shared()
    log = None if verbose else run.out_dir / contract.SPARK_LOG
    session = spark or get_session(spark_master, jvm=jvm or jvm_for(run), log=log)
    try:
        from scotbed.analysis import pipeline

        with _sql_conf(session, _conf_for(session, run)):
            return pipeline.analyze(session, run, pipeline.Settings(settle_ms, engine, first_n), t0)
    finally:
        if own:
            session.stop()


def import_code() -> None:
    """Import the analysis's own code and matplotlib (seconds of work) ahead of an analysis; an import
    under way in another thread is waited for, not repeated."""
    for module in (PIPELINE_MODULE, PLOTTER_MODULE):
        importlib.import_module(module)


def jvm_for(run: RunDir) -> Jvm:
    """The JVM started for this run's analysis: a short-lived one up to
    :data:`~scotbed.analysis.size.SHORT_JVM_BYTES` of event text."""
    return SHORT_JVM if wants_short_jvm(run) else LONG_JVM


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
