"""What the summary sections share: the run's events parsed once, and the results several sections read.

The logs and the workload files are parsed by Spark, in its tasks (on a cluster, in the executors),
under fixed schemas (:mod:`scotbed.analysis.events`); the driver collects only aggregated results
(per-broker tables, distributions, histograms) and the small per-subscription rows.

Each shared input is computed on first use and kept (persisted DataFrames are
released by :meth:`RunData.close`), so the sections can be written, ordered and
extended independently without computing anything twice. Sections run two at a
time (:func:`scotbed.analysis.api.analyze`), so an input two sections ask for at
once is computed once (:class:`shared_input`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast, overload

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from scotbed import contract
from scotbed.analysis import corrupt_logs, faultwindows, oracle, propagation, unreadable
from scotbed.analysis import metrics as M
from scotbed.analysis.events import corrupt_lines, malformed_per_file, read_lines, read_publications, valid
from scotbed.analysis.oracle import Episode
from scotbed.analysis.rundir import RunDir
from scotbed.analysis.series import bins, sample_series

# The hop counts (0..this) the one pass over the deliveries counts: a path longer than any the
# testbed's overlays make; a delivery beyond it makes the hops a query of their own.
HOPS_COUNTED = 32


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

    def written(self, df: DataFrame, name: str) -> DataFrame:
        """``df`` written by Spark to ``analysis/<name>.parquet`` (a directory of part files) and read
        back: what later queries read."""
        path = self.run.analysis_dir / f"{name}.parquet"
        df.write.mode("overwrite").parquet(str(path))
        return self.spark.read.schema(df.schema).parquet(str(path))

    # --- the events, parsed once --------------------------------------------------------------

    @shared_input
    def lines(self) -> DataFrame:
        """Every line of the logs (a malformed one is a row of nulls), parsed once by Spark's tasks and
        kept (memory, else disk) for every later query."""
        return self.keep(read_lines(self.spark, self.run.event_files()))

    @shared_input
    def line_counts(self) -> tuple[int, int]:
        """(valid events, lines) of the logs; the parse's first action (which fills the kept lines)."""
        row = self.lines.agg(F.sum(valid().cast("long")), F.count("*")).first()
        return int((row and row[0]) or 0), int(row[1] if row else 0)

    @shared_input
    def events(self) -> DataFrame:
        return self.lines.where(valid())

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

    # --- shared results -----------------------------------------------------------------------

    @shared_input
    def node_facts(self) -> pd.DataFrame:
        return M.node_facts(self.events)

    @shared_input
    def matching(self) -> tuple[pd.DataFrame, dict[str, Any]]:
        """The matching delays (µs): (node, p99_us) per broker and the run's distribution."""
        return M.matching_delays(self.events)

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
        return self.keep(M.publication_times(self.events, self.publications))

    @shared_input
    def pub_stats(self) -> PubStats:
        """What several sections read of the publication times, in one aggregate."""
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

    @property
    def published(self) -> tuple[int, int | None]:
        """(publications, first intended ns)."""
        return self.pub_stats.count, self.pub_stats.first_ns

    @shared_input
    def deliveries(self) -> DataFrame:
        """One row per receive, written to ``deliveries.parquet``; the sections read them back from there."""
        return self.written(M.deliveries(self.events, self.pub_times), "deliveries")

    @shared_input
    def last_receive_ns(self) -> int | None:
        """The last receive's time."""
        row = self.deliveries.agg(F.max("recv_ns")).first()
        return None if row is None or row[0] is None else int(row[0])

    @shared_input
    def _delivery_stats(
        self,
    ) -> tuple[dict[str, Any], dict[str, list[tuple[float, float]]], pd.DataFrame | None]:
        """Delays and hop counts in one pass over the deliveries."""
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
        expected = self._expected(eps)
        result, _, offenders = oracle.check(expected, self.deliveries, self.settings.first_n)
        self._kept.append(offenders)
        unreadable.excuse(result, offenders, *self.unreadable)
        offenders.write.mode("overwrite").parquet(str(self.run.out_dir / contract.OFFENDERS))
        return Oracle(result, expected, brokers)

    def _expected(self, eps: list[Episode]) -> DataFrame:
        """The expected pairs by :func:`~scotbed.analysis.oracle.expected_deliveries`: the publications
        matched in Spark's tasks."""
        pubs = self.publications
        assert pubs is not None  # the oracle runs only with the file
        return self.keep(oracle.expected_deliveries(self.spark, pubs, eps, self.engine))
