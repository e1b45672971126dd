"""Read a run's event logs and workload into Spark DataFrames with fixed schemas.

The schema is the union of the fields DESIGN §5 and the broker/client
contracts define; a field an event does not carry is null. Lines that are not
valid JSON or lack ``ts_ns``/``ev`` are dropped and counted (``malformed``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scotbed.analysis.rundir import RunDir

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

EVENT_FIELDS: tuple[tuple[str, str], ...] = (
    ("ts_ns", "BIGINT"),
    ("node", "STRING"),
    ("ev", "STRING"),
    ("sub_id", "STRING"),
    ("pub_id", "STRING"),
    ("link", "STRING"),
    ("hops", "BIGINT"),
    ("dynamic", "BOOLEAN"),
    ("us", "DOUBLE"),
    ("n", "BIGINT"),
    ("len", "BIGINT"),
    ("ce", "DOUBLE"),
    ("size", "BIGINT"),
    ("reason", "STRING"),
    ("intended_ns", "BIGINT"),
    ("sent_ns", "BIGINT"),
)
EVENT_DDL = ", ".join(f"`{n}` {t}" for n, t in EVENT_FIELDS)

PUBLICATION_DDL = "ts_ns BIGINT, intended_ns BIGINT, pub_id STRING, publisher STRING, broker STRING"

BROKER_EVENTS = ("sub_in", "sub_out", "unsub_in", "unsub_out", "notif_in", "notif_out", "match", "deliver")


def read_raw(spark: SparkSession, paths: list[str]) -> DataFrame:
    """Every line of the logs under the event schema; ``.gz`` files are decompressed by Spark."""
    return spark.read.schema(f"{EVENT_DDL}, `_corrupt_record` STRING").json(paths)  # see analysis.unreadable


def valid() -> Column:
    """True for a line that parsed and carries ``ts_ns`` and ``ev``."""
    from pyspark.sql import functions as F

    return F.col("ts_ns").isNotNull() & F.col("ev").isNotNull()


def read_events(spark: SparkSession, paths: list[str]) -> tuple[DataFrame, DataFrame]:
    """(valid events, malformed lines)."""
    raw = read_raw(spark, paths)
    return raw.where(valid()), raw.where(~valid())


def read_publications(spark: SparkSession, run: RunDir) -> DataFrame | None:
    """The publication workload without its content (``attrs`` stays in the text for the oracle)."""
    if not run.publications_file.exists():
        return None
    return spark.read.schema(PUBLICATION_DDL).json(str(run.publications_file))
