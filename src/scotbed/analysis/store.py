"""The run's event logs parsed once, under the event schema, into the store every metric reads.

A large run's logs go through Arrow's JSON reader into Parquet (:mod:`scotbed.analysis.arrow_store`),
several logs at once; a log Arrow refuses (a cut line, a value of another type) is parsed by Spark into
Parquet beside them. A small run's logs are parsed by Spark into its memory cache: on a cold JVM the
store's Parquet scans would cost more than the parse. Neither keeps the text of malformed lines: a
run whose line counts show some reads them again (:func:`scotbed.analysis.events.corrupt_lines`).
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from scotbed.analysis.arrow_store import Parsed, parse_log
from scotbed.analysis.events import EVENT_DDL, PLAIN_COLUMNS, valid


@dataclass(frozen=True)
class Store:
    """Every line of the logs (a malformed one is a row of nulls), and what is known of their counts."""

    lines: DataFrame
    counted: Parsed  # the lines and valid events of the logs Arrow read
    uncounted: DataFrame | None  # the lines Spark parsed, counted by a query

    def counts(self) -> tuple[int, int]:
        """(valid events, lines): one query over the part Spark parsed (the first, which fills a cache)."""
        n_valid, lines = self.counted.valid, self.counted.lines
        if self.uncounted is not None:
            row = self.uncounted.agg(F.sum(valid().cast("long")), F.count("*")).first()
            n_valid, lines = n_valid + int((row and row[0]) or 0), lines + int(row[1] if row else 0)
        return n_valid, lines


def store_events(spark: SparkSession, paths: list[str], dest: Path, in_memory: bool = False) -> Store:
    """Parse the logs once into Spark's memory cache (``in_memory``) or Parquet under ``dest``, which
    lives for one analysis (uncompressed: compressing it costs more than it saves).

    The Parquet store is written by Arrow, in about half the time of Spark's own parse. Each log is cut
    into files of :data:`~scotbed.analysis.arrow_store.FILE_ROWS`, as whole-log files leave Spark's scan
    partitions unequal (figures: benchmarks/README.md).
    """
    shutil.rmtree(dest, ignore_errors=True)
    if in_memory:
        cached = spark.read.schema(EVENT_DDL).json(paths).persist(StorageLevel.MEMORY_AND_DISK)
        return Store(cached, Parsed(0, 0), cached)
    arrow_dir = dest / "arrow"
    arrow_dir.mkdir(parents=True)
    parsed = parse_logs(spark, paths, [str(arrow_dir / f"log-{i:05d}") for i in range(len(paths))])
    refused = [path for path, got in zip(paths, parsed, strict=True) if got is None]
    read = [got for got in parsed if got is not None]
    counted = Parsed(sum(p.lines for p in read), sum(p.valid for p in read))
    by_spark = _spark_parquet(spark, refused, dest / "spark") if refused else None
    if not any(arrow_dir.iterdir()):
        return Store(by_spark if by_spark is not None else _empty(spark), counted, by_spark)
    by_arrow = spark.read.schema(EVENT_DDL).parquet(str(arrow_dir))
    return Store(by_arrow if by_spark is None else by_arrow.unionByName(by_spark), counted, by_spark)


def parse_logs(spark: SparkSession, paths: list[str], prefixes: list[str]) -> list[Parsed | None]:
    """Each log through :func:`~scotbed.analysis.arrow_store.parse_log`: on a local master in the
    driver's threads (no Python worker to start), else in Spark tasks on the executors."""
    if (spark.sparkContext.master or "").startswith("local"):
        with ThreadPoolExecutor(max(1, spark.sparkContext.defaultParallelism)) as pool:
            return list(pool.map(parse_log, paths, prefixes))
    return parse_in_tasks(spark, paths, prefixes)


def parse_in_tasks(spark: SparkSession, paths: list[str], prefixes: list[str]) -> list[Parsed | None]:
    """One Spark task per log. The executors read the logs and write the store by path, so, as for
    Spark's own JSON read, they must see the run directory at the same path as the driver."""
    pairs = list(zip(paths, prefixes, strict=True))
    return spark.sparkContext.parallelize(pairs, max(1, len(pairs))).map(_parse_pair).collect()


def _parse_pair(pair: tuple[str, str]) -> Parsed | None:
    return parse_log(*pair)


def _spark_parquet(spark: SparkSession, paths: list[str], dest: Path) -> DataFrame:
    """The logs parsed by Spark, written to Parquet at ``dest`` and read back."""
    writer = spark.read.schema(EVENT_DDL).json(paths).write.mode("overwrite").option("compression", "none")
    for name in PLAIN_COLUMNS:
        writer = writer.option(f"parquet.enable.dictionary#{name}", "false")
    writer.parquet(str(dest))
    return spark.read.schema(EVENT_DDL).parquet(str(dest))


def _empty(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([], EVENT_DDL)
