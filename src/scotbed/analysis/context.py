"""What the summary sections share: the run's events parsed once, and the results several sections read.

Each shared input is computed on first use and kept (persisted DataFrames are
released by :meth:`RunData.close`), so the sections can be written, ordered and
extended independently without computing anything twice.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, cast

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from scotbed import contract
from scotbed.analysis import metrics as M
from scotbed.analysis import oracle, unreadable
from scotbed.analysis.events import read_publications, store_events, valid
from scotbed.analysis.rundir import RunDir

IN_MEMORY_BYTES = 64 << 20  # runs with less event text than this are cached in memory, not in Parquet


@dataclass(frozen=True)
class Settings:
    settle_ms: float | None = None
    engine: str | None = None
    first_n: int = 10


@dataclass(frozen=True)
class Oracle:
    """The checked correctness: counts and first offenders, the expected pairs and the compared pairs."""

    result: dict[str, Any]
    expected: DataFrame
    pairs: DataFrame


@dataclass
class RunData:
    spark: SparkSession
    run: RunDir
    settings: Settings = field(default_factory=Settings)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # written as analysis/<name>.parquet
    plot_data: dict[str, Any] = field(default_factory=dict)
    _kept: list[DataFrame] = field(default_factory=list)

    def keep(self, df: DataFrame) -> DataFrame:
        self._kept.append(df.persist(StorageLevel.MEMORY_AND_DISK))
        return df

    def close(self) -> None:
        for df in self._kept:
            df.unpersist()
        shutil.rmtree(self.store_dir, ignore_errors=True)

    @property
    def store_dir(self) -> Path:
        return self.run.analysis_dir / ".events.parquet"

    # --- the events, parsed once --------------------------------------------------------------

    @cached_property
    def stored(self) -> DataFrame:
        """Every line of the logs (malformed ones too), read back from the Parquet store."""
        small = self.run.event_text_bytes() < IN_MEMORY_BYTES
        stored = store_events(self.spark, self.run.event_files(), self.store_dir, in_memory=small)
        if small:
            self._kept.append(stored)
        return stored

    @cached_property
    def events(self) -> DataFrame:
        return self.stored.where(valid())

    @cached_property
    def unreadable(self) -> tuple[DataFrame, dict[str, Any]]:
        """The client receive lines that do not parse: (their recovered pairs, {"count", "lines"})."""
        pairs, found = unreadable.receives(self.stored.where(~valid()))
        return self.keep(pairs), found

    @cached_property
    def publications(self) -> DataFrame | None:
        pubs = read_publications(self.spark, self.run)
        return None if pubs is None else self.keep(pubs)

    # --- shared results -----------------------------------------------------------------------

    @cached_property
    def node_facts(self) -> pd.DataFrame:
        return M.node_facts(self.events)

    @cached_property
    def sub_facts(self) -> DataFrame:
        return self.keep(M.subscription_facts(self.events))

    @cached_property
    def sub_table(self) -> pd.DataFrame:
        """Every subscription event's sub_id with its times (the subscription table is ``in_table``)."""
        return cast(pd.DataFrame, self.sub_facts.toPandas())

    @cached_property
    def pub_times(self) -> DataFrame:
        return self.keep(M.publication_times(self.events, self.publications))

    @cached_property
    def published(self) -> tuple[int, int | None]:
        """(publications, first intended ns), one action over the publication times."""
        row = self.pub_times.agg(F.count("*"), F.min("intended_ns")).first()
        first = int(row[1]) if row and row[1] is not None else None
        return (int(row[0]) if row else 0), first

    @cached_property
    def deliveries(self) -> DataFrame:
        """One row per receive, written once to ``deliveries.parquet`` and read back from there."""
        path = str(self.run.analysis_dir / "deliveries.parquet")
        M.deliveries(self.events, self.pub_times).write.mode("overwrite").parquet(path)
        return self.spark.read.parquet(path)

    @cached_property
    def delays(self) -> tuple[dict[str, Any], dict[str, list[tuple[float, float]]]]:
        return M.delivery_delays(self.deliveries)

    @cached_property
    def hops(self) -> pd.DataFrame:
        return M.hops_distribution(self.deliveries)

    @property
    def settle_ms(self) -> float:
        if self.settings.settle_ms is not None:
            return float(self.settings.settle_ms)
        return float((self.run.spec.get("analysis") or {}).get("settle_ms", 0.0))

    @cached_property
    def engine(self) -> str:
        return oracle.pick_engine(self.settings.engine)

    @cached_property
    def oracle(self) -> Oracle | None:
        """The expected deliveries against the receives; None without the workload files."""
        pubs = self.publications
        if pubs is None or not self.run.subscriptions_file.exists():
            return None
        t = self.sub_table
        eps = oracle.episodes(
            self.run.subscription_ops(),
            M.times_of(t[t["in_table"]], "stored_ns"),
            M.times_of(t, "unsub_settled_ns"),
            M.times_of(t, "subscribe_ns"),
            M.times_of(t, "unsubscribe_ns"),
            settle_ns=int(self.settle_ms * 1e6),
        )
        expected = self.keep(oracle.expected_deliveries(self.spark, pubs, eps, self.engine))
        result, pairs = oracle.check(expected, self.deliveries, self.settings.first_n)
        unreadable.excuse(result, pairs, self.unreadable[0])
        self._kept.append(pairs)
        offenders = pairs.where(F.col("missing") | F.col("false_positive") | F.col("duplicate"))
        offenders.write.mode("overwrite").parquet(str(self.run.path / contract.OFFENDERS))
        return Oracle(result, expected, pairs)
