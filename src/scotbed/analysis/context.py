"""What the summary sections share: the run's events parsed once, and the results several sections read.

Each shared input is computed on first use and kept (persisted DataFrames are
released by :meth:`RunData.close`), so the sections can be written, ordered and
extended independently without computing anything twice. Sections run two at a
time (:func:`scotbed.analysis.api.analyze`), so an input two sections ask for at
once is computed once (:class:`shared_input`).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, cast, overload

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from scotbed import contract
from scotbed.analysis import corrupt_logs, faultwindows, oracle, propagation, unreadable
from scotbed.analysis import metrics as M
from scotbed.analysis.events import corrupt_lines, malformed_per_file, read_publications, valid
from scotbed.analysis.oracle import Episode
from scotbed.analysis.pub_arrow import COLUMNS_DDL, Publications
from scotbed.analysis.pub_arrow import read_publications as arrow_publications
from scotbed.analysis.rundir import RunDir
from scotbed.analysis.series import bins, sample_series
from scotbed.analysis.size import is_small
from scotbed.analysis.store import Store, store_events
from scotbed.analysis.traffic import traffic_per_broker

# Runs with less event text than this keep their parsed events in Spark's memory cache, not in Parquet
# (a small run pays Parquet's fixed cost of writing files; from about 91 MB of text the Parquet store is
# the cheaper one, figures: benchmarks/README.md).
IN_MEMORY_BYTES = 64 << 20
# The hop counts (0..this) the one pass over the deliveries counts: a path longer than any the
# testbed's overlays make; a delivery beyond it makes the hops a query of their own.
HOPS_COUNTED = 32
# Up to this many valid events a run's deliveries (32 bytes a receive) and its matches (12 bytes a match)
# are collected to the driver, and a run has fewer of either than events: their quantiles are then
# exact. For the deliveries one sort and one collect serve both the delay statistics and the stability
# windows, where Spark's percentile_approx would be a job of its own. For the matches see
# :func:`scotbed.analysis.metrics.matching_delays`.
COLLECTED_EVENTS = 20_000_000
# Runs whose publication workload has less text than this match it in the driver (collected as Arrow),
# not in Python workers, which cost a cold session more than the driver's work; a much larger workload
# makes the driver's pairs a large local relation, slower than the workers' (figures:
# benchmarks/README.md).
DRIVER_MATCH_BYTES = 16 << 20
# The one part file of a table a small run's driver writes (:meth:`RunData.written`), named as Spark
# names its parts so that a table's directory reads alike whoever wrote it.
SMALL_RUN_PART = "part-00000-driver.snappy.parquet"


T = TypeVar("T")


class shared_input(Generic[T]):
    """A cached property two threads may ask for at once: the second waits for the first's value.

    Each input has its own lock, so different inputs compute at the same time; an input waits only
    for the inputs it reads, and those never read it back, so no two threads wait on each other.
    """

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute = compute
        self.name = compute.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> shared_input[T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> T | shared_input[T]:
        if obj is None:
            return self
        values = obj.__dict__
        if self.name not in values:
            with _lock_of(obj, self.name):
                if self.name not in values:
                    values[self.name] = self.compute(obj)
        return cast(T, values[self.name])


_LOCKS_LOCK = threading.Lock()


def _lock_of(obj: object, name: str) -> threading.Lock:
    with _LOCKS_LOCK:
        locks: dict[str, threading.Lock] = obj.__dict__.setdefault("_input_locks", {})
        return locks.setdefault(name, threading.Lock())


@dataclass(frozen=True)
class Settings:
    settle_ms: float | None = None
    engine: str | None = None
    first_n: int = 10


@dataclass(frozen=True)
class Oracle:
    """The checked correctness: counts and first offenders, the expected pairs, and the brokers the
    subscriptions were made at (an expected pair's ``broker`` is one of them)."""

    result: dict[str, Any]
    expected: DataFrame
    brokers: frozenset[str]


@dataclass(frozen=True)
class PubStats:
    """The publications: how many, the first and last intended ns, the send lag (sent - intended, ms),
    and the burst: the (first, last) intended ns of the workload's high-rate publishers."""

    count: int
    first_ns: int | None
    last_ns: int | None
    send_lag_ms: dict[str, Any]
    burst: tuple[int, int] | None


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
        shutil.rmtree(self.driver_dir, ignore_errors=True)

    @shared_input
    def small(self) -> bool:
        """Below :data:`~scotbed.analysis.size.SMALL_RUN_BYTES` of event text: sections may compute from
        collected rows."""
        return is_small(self.run)

    @property
    def store_dir(self) -> Path:
        return self.run.analysis_dir / ".events.parquet"

    @property
    def driver_dir(self) -> Path:
        """Where tables the driver made are written for Spark to read (for this analysis only)."""
        return self.run.analysis_dir / ".driver.parquet"

    def written(self, df: DataFrame, name: str) -> DataFrame:
        """``df`` written to ``analysis/<name>.parquet`` (a directory of part files); returns what later
        queries read. A large run's is written by Spark and read back. A small run's rows are collected
        as Arrow and written by the driver as one part file, and later queries read ``df`` itself: on a
        cold JVM, Spark's first Parquet write loads its writer (0.9-1.6 s on `make demo`'s run) and a
        new Parquet scan costs more than ``df``'s cached rows."""
        path = self.run.analysis_dir / f"{name}.parquet"
        if not self.small:
            df.write.mode("overwrite").parquet(str(path))
            return self.spark.read.schema(df.schema).parquet(str(path))
        table = df.toArrow()
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        pq.write_table(table, path / SMALL_RUN_PART)
        return df

    def from_driver(self, table: pa.Table, name: str, ddl: str) -> DataFrame:
        """A table the driver made (whose schema is ``ddl``'s) as Spark's: a large run's written as
        Parquet and read back (Spark reads a file for less than it builds a large local relation), a
        small run's a local relation (a cold JVM pays more for a new Parquet scan)."""
        if self.small:
            return self.spark.createDataFrame(table)
        self.driver_dir.mkdir(parents=True, exist_ok=True)
        path = self.driver_dir / f"{name}.parquet"
        pq.write_table(table, path, compression="none")
        return self.spark.read.schema(ddl).parquet(str(path))

    # --- the events, parsed once --------------------------------------------------------------

    @shared_input
    def stored(self) -> Store:
        """Every line of the logs (malformed ones too), parsed once."""
        small = self.run.event_text_bytes() < IN_MEMORY_BYTES
        stored = store_events(self.spark, self.run.event_files(), self.store_dir, in_memory=small)
        if small:
            self._kept.append(stored.lines)
        return stored

    @shared_input
    def line_counts(self) -> tuple[int, int]:
        """(valid events, lines) of the logs; the parse's first action (which fills a memory store)."""
        return self.stored.counts()

    @shared_input
    def events(self) -> DataFrame:
        return self.stored.lines.where(valid())

    @shared_input
    def unreadable(self) -> tuple[DataFrame, dict[str, Any]]:
        """The client receive lines that do not parse: (their recovered pairs, {"count", "lines"}).
        The logs' malformed lines are read again, with their text, only when there are some."""
        n_valid, lines = self.line_counts
        malformed = None
        if lines > n_valid:
            malformed = self.keep(corrupt_lines(self.spark, self.run.event_files())).where(~valid())
        pairs, found = unreadable.receives(self.spark, malformed)
        return self.keep(pairs), found

    @shared_input
    def corrupt_broker_logs(self) -> dict[str, int]:
        """Broker log file name -> its malformed lines that no kill of the run excuses
        (:mod:`.corrupt_logs`); the brokers' logs are parsed again, per file, only when the line counts
        show malformed lines."""
        n_valid, lines = self.line_counts
        brokers = set(self.run.broker_ids())
        logs = [f for f in self.run.event_files() if corrupt_logs.broker_of(f) in brokers]
        if lines == n_valid or not logs:
            return {}
        kills = faultwindows.kills(faultwindows.records(self.run.path))
        return corrupt_logs.unexcused(malformed_per_file(self.spark, logs), brokers, kills)

    @shared_input
    def publications(self) -> DataFrame | None:
        """The workload's publications as Spark parses them, ``attrs`` as JSON text."""
        pubs = read_publications(self.spark, self.run)
        return None if pubs is None else self.keep(pubs)

    @shared_input
    def pub_arrow(self) -> Publications | None:
        """The workload's publications parsed once by Arrow (:mod:`.pub_arrow`); None without the file
        or where Arrow's parse cannot tell what Spark's would hold."""
        path = self.run.publications_file
        return arrow_publications(path) if path.exists() else None

    @shared_input
    def pub_columns(self) -> DataFrame | None:
        """The publications without their attrs, for the publication times: from Arrow's parse where
        it read them, else Spark's."""
        arrow = self.pub_arrow
        if arrow is None:
            return self.publications
        table = arrow.table.filter(pc.is_valid(arrow.table["pub_id"]))
        return self.from_driver(table, "publications", COLUMNS_DDL)

    # --- shared results -----------------------------------------------------------------------

    @shared_input
    def node_facts(self) -> pd.DataFrame:
        return M.node_facts(self.events)

    @shared_input
    def matching(self) -> tuple[pd.DataFrame, dict[str, Any]]:
        """The matching delays (µs): (node, p99_us) per broker and the run's distribution; the matches
        are collected up to :data:`COLLECTED_EVENTS` valid events."""
        return M.matching_delays(self.events, collect=self.line_counts[0] <= COLLECTED_EVENTS)

    @shared_input
    def series(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The queue and the routing-table series, binned, from one query."""
        facts = self.node_facts
        return sample_series(self.events, bins(facts, contract.QUEUE), bins(facts, contract.TABLE))

    @shared_input
    def sub_table(self) -> pd.DataFrame:
        """Every subscription event's sub_id with its times (the subscription table is ``in_table``),
        collected once: every reader computes from these rows."""
        return cast(pd.DataFrame, M.subscription_facts(self.events).toPandas())

    @shared_input
    def sub_traffic(self) -> list[propagation.Row]:
        """The brokers' subscription traffic the oracle traces (:mod:`.propagation`), collected as Arrow:
        a few events per subscription and broker."""
        rows = M.of(self.events, *propagation.EVENTS).select(*propagation.COLUMNS).toArrow()
        return list(zip(*(rows[c].to_pylist() for c in propagation.COLUMNS), strict=True))

    @shared_input
    def pub_times(self) -> DataFrame:
        return self.keep(M.publication_times(self.events, self.pub_columns))

    @shared_input
    def pub_stats(self) -> PubStats:
        """What several sections read of the publication times, in one action: collected as Arrow (32 bytes
        a publication, the lag's quantiles by rank) up to :data:`COLLECTED_EVENTS` valid events, faster than
        Spark's aggregate with its percentile."""
        if self.line_counts[0] <= COLLECTED_EVENTS:
            return self._collected_pub_stats()
        lag = ((F.col("sent_ns") - F.col("intended_ns")) / 1e6).alias("send_lag_ms")
        row = (
            self.pub_times.select("intended_ns", "hrp_first_ns", "hrp_last_ns", lag)
            .agg(
                F.count("*").alias("n"),
                F.min("intended_ns").alias("first"),
                F.max("intended_ns").alias("last"),
                F.min("hrp_first_ns").alias("hrp_first"),
                F.max("hrp_last_ns").alias("hrp_last"),
                *M.dist_aggs("send_lag_ms"),
            )
            .first()
        )
        assert row is not None  # a global aggregate has one row
        first, last = (None if row[k] is None else int(row[k]) for k in ("first", "last"))
        burst = None if row["hrp_first"] is None else (int(row["hrp_first"]), int(row["hrp_last"]))
        return PubStats(int(row["n"]), first, last, M.dist_of(row, "send_lag_ms"), burst)

    def _collected_pub_stats(self) -> PubStats:
        t = self.pub_times.select("intended_ns", "sent_ns", "hrp_first_ns", "hrp_last_ns").toArrow()
        lag = pc.divide(pc.subtract(t["sent_ns"], t["intended_ns"]).cast(pa.float64()), 1e6)
        first, last = (pc.min_max(t["intended_ns"])[k].as_py() for k in ("min", "max"))
        hrp_first, hrp_last = pc.min(t["hrp_first_ns"]).as_py(), pc.max(t["hrp_last_ns"]).as_py()
        burst = None if hrp_first is None else (hrp_first, hrp_last)
        return PubStats(t.num_rows, first, last, M.local_distribution(lag.to_pandas()), burst)

    @property
    def published(self) -> tuple[int, int | None]:
        """(publications, first intended ns)."""
        return self.pub_stats.count, self.pub_stats.first_ns

    @shared_input
    def deliveries(self) -> DataFrame:
        """One row per receive, written to ``deliveries.parquet``. A large run's sections read them back
        from there: cheaper than Spark's memory cache, whose columnar build costs more than the write
        (8.5M events: write 2.9-3.1 s, read 0.23 s; cache and write 3.35 s, read 0.18 s). A small run's
        stay in Spark's memory cache, which their collection for the write fills (:meth:`written`)."""
        deliv = M.deliveries(self.events, self.pub_times)
        return self.written(self.keep(deliv) if self.small else deliv, "deliveries")

    @shared_input
    def collected_receives(self) -> pa.Table | None:
        """Every delivery's receive time, delays, hops and pair, collected once as Arrow (for the delay
        statistics, the stability windows and the oracle's check); None above :data:`COLLECTED_EVENTS`
        valid events."""
        if self.line_counts[0] > COLLECTED_EVENTS:
            return None
        return M.collect_receives(self.deliveries)

    @shared_input
    def receives(self) -> pd.DataFrame | None:
        """:attr:`collected_receives` in receive order, without the pair."""
        rows = self.collected_receives
        return None if rows is None else M.in_receive_order(rows)

    @shared_input
    def last_receive_ns(self) -> int | None:
        """The last receive's time: from the collected receives, else one query."""
        rows = self.receives
        if rows is not None:
            last = rows["recv_ns"].max()
            return None if pd.isna(last) else int(last)
        row = self.deliveries.agg(F.max("recv_ns")).first()
        return None if row is None or row[0] is None else int(row[0])

    @shared_input
    def _delivery_stats(
        self,
    ) -> tuple[dict[str, Any], dict[str, list[tuple[float, float]]], pd.DataFrame | None]:
        """Delays and hop counts: from the collected receives, else in one pass over the deliveries."""
        rows = self.receives
        if rows is not None:
            return M.local_delivery_stats(rows)
        return M.delivery_stats(self.deliveries, HOPS_COUNTED)

    @shared_input
    def delays(self) -> tuple[dict[str, Any], dict[str, list[tuple[float, float]]]]:
        dists, curves, _ = self._delivery_stats
        return dists, curves

    @shared_input
    def hops(self) -> pd.DataFrame:
        hops = self._delivery_stats[2]
        return M.hops_distribution(self.deliveries) if hops is None else hops

    @property
    def settle_ms(self) -> float:
        if self.settings.settle_ms is not None:
            return float(self.settings.settle_ms)
        return self.run.spec.analysis.settle_ms

    @shared_input
    def engine(self) -> str:
        return oracle.pick_engine(self.settings.engine)

    @shared_input
    def traffic(self) -> tuple[pd.DataFrame, pd.DataFrame] | None:
        """(relay, false_positive_traffic) per broker (:func:`scotbed.analysis.traffic.traffic_per_broker`),
        read by the ``traffic`` and ``pruning`` sections; None when the oracle could not run."""
        o = self.oracle
        if o is None:
            return None
        brokers = o.brokers | set(self.node_facts["node"].dropna())
        collect = self.line_counts[0] <= COLLECTED_EVENTS
        return traffic_per_broker(self.events, o.expected.select("pub_id", "broker"), brokers, collect)

    @shared_input
    def oracle(self) -> Oracle | None:
        """The expected deliveries against the receives; None without the workload files."""
        if not (self.run.publications_file.exists() and self.run.subscriptions_file.exists()):
            return None
        t = self.sub_table
        eps = oracle.episodes_of_logs(
            self.run.subscription_ops(),
            self.sub_traffic,
            M.times_of(t, "subscribe_ns"),
            M.times_of(t, "unsubscribe_ns"),
            settle_ns=int(self.settle_ms * 1e6),
        )
        brokers = frozenset(e.broker for e in eps)
        arrow = self.pub_arrow
        table = None if arrow is None else oracle.expected_of_columns(arrow, eps, self.engine)
        if table is None:
            expected = self._expected(eps)
        else:
            expected = self.from_driver(table, "expected", oracle.EXPECTED_DDL)
            if (received := self.collected_receives) is not None:
                return Oracle(self._check_local(table, received), expected, brokers)
        result, _, offenders = oracle.check(expected, self.deliveries, self.settings.first_n)
        self._kept.append(offenders)
        unreadable.excuse(result, offenders, *self.unreadable)
        offenders.write.mode("overwrite").parquet(str(self.run.out_dir / contract.OFFENDERS))
        return Oracle(result, expected, brokers)

    def _check_local(self, expected: pa.Table, received: pa.Table) -> dict[str, Any]:
        """:func:`~scotbed.analysis.oracle.check_local` of the pairs in the driver, its offenders written
        to ``contract.OFFENDERS`` (and read back by Spark only to excuse unreadable receives)."""
        result, offenders = oracle.check_local(expected, received, self.settings.first_n)
        path = self.run.out_dir / contract.OFFENDERS
        if path.is_dir():  # Spark's, of an earlier analysis
            shutil.rmtree(path)
        pq.write_table(offenders, path)
        offenders_df = self.spark.read.schema(oracle.OFFENDERS_DDL).parquet(str(path))
        unreadable.excuse(result, offenders_df, *self.unreadable)
        return result

    def _expected(self, eps: list[Episode]) -> DataFrame:
        """The expected pairs by :func:`~scotbed.analysis.oracle.expected_deliveries` over Spark's
        publications: where Arrow's parse could not read them or a filter is not exact."""
        pubs = self.publications
        assert pubs is not None  # the oracle runs only with the file
        in_driver = self.run.publications_file.stat().st_size < DRIVER_MATCH_BYTES
        return self.keep(oracle.expected_deliveries(self.spark, pubs, eps, self.engine, in_driver))
