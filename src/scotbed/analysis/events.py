"""Read a run's event logs and workload into Spark DataFrames with fixed schemas, parsing each once.

The schema is the union of the fields docs/design.md §5 and the broker/client
contracts define; a field an event does not carry is null. Lines that are not
valid JSON or lack ``ts_ns``/``ev`` are dropped and counted (``malformed``);
a broker log's are named per file (:func:`malformed_per_file`): they make the
correctness verdict fail (:mod:`scotbed.analysis.corrupt_logs`).

JSON parsing is most of the cost of an analysis, so
:func:`scotbed.analysis.store.store_events` parses the logs once, into Parquet
or Spark's memory cache: every metric afterwards reads only the columns it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

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
    ("lag_ms_max", "DOUBLE"),
    ("lag_ms_mean", "DOUBLE"),
    ("probes", "BIGINT"),
    ("cpu", "DOUBLE"),
    ("wall_ms", "DOUBLE"),
    ("wait_ms", "DOUBLE"),
    ("peak", "BIGINT"),
    ("steps", "BIGINT"),
    ("kind", "STRING"),
    ("phase", "STRING"),
    ("packed", "BIGINT"),
)
EVENT_DDL = ", ".join(f"`{n}` {t}" for n, t in EVENT_FIELDS)
CORRUPT = "_corrupt_record"  # Spark's column for a line that is not valid JSON under the schema
#: the event schema plus the text of a line that does not parse (see :mod:`scotbed.analysis.unreadable`)
RAW_DDL = f"{EVENT_DDL}, `{CORRUPT}` STRING"

# Columns with a value per event or per publication, written to the Parquet store without a dictionary:
# Parquet's writer tries one for every column and drops it once it outgrows a page, which these always
# do, so trying costs write time for nothing; the rest (event names, brokers, links, sub ids) keep theirs.
PLAIN_COLUMNS = ("ts_ns", "pub_id", "intended_ns", "sent_ns", "us")

# ``attrs`` is read as its JSON text (Spark keeps a nested object's text for a STRING field): only
# the oracle's matcher looks inside it.
PUBLICATION_FIELDS: tuple[tuple[str, str], ...] = (
    ("ts_ns", "BIGINT"),
    ("intended_ns", "BIGINT"),
    ("pub_id", "STRING"),
    ("publisher", "STRING"),
    ("broker", "STRING"),
    ("attrs", "STRING"),
)
PUBLICATION_DDL = ", ".join(f"{n} {t}" for n, t in PUBLICATION_FIELDS)


def read_raw(spark: SparkSession, paths: list[str]) -> DataFrame:
    """Every line of the logs under the event schema; ``.gz`` files are decompressed by Spark."""
    return spark.read.schema(RAW_DDL).json(paths)


def valid() -> Column:
    """True for a line that parsed and carries ``ts_ns`` and ``ev``."""
    from pyspark.sql import functions as F

    return F.col("ts_ns").isNotNull() & F.col("ev").isNotNull()


def read_events(spark: SparkSession, paths: list[str]) -> tuple[DataFrame, DataFrame]:
    """(valid events, malformed lines)."""
    raw = read_raw(spark, paths)
    return raw.where(valid()), raw.where(~valid())


def corrupt_lines(spark: SparkSession, paths: list[str]) -> DataFrame:
    """The lines that do not parse under the event schema, with their text (:data:`CORRUPT`): a second
    parse of the logs, for a run that has such lines (keeping every line's text costs the first parse
    about a tenth). Persist it before filtering on :func:`valid`: Spark evaluates a filter it pushes into the
    JSON parser on a line's partial parse, so a cut line would pass as valid."""
    from pyspark.sql import functions as F

    return read_raw(spark, paths).where(F.col(CORRUPT).isNotNull())


def malformed_per_file(spark: SparkSession, paths: list[str]) -> dict[str, int]:
    """Path -> its lines that do not parse or lack ``ts_ns``/``ev``, for the logs that have any: a
    parse of ``paths`` of its own, counted per file in one aggregate (no filter on a partial parse)."""
    from pyspark.sql import functions as F

    bad = (F.col(CORRUPT).isNotNull() | ~valid()).cast("long")
    rows = (
        read_raw(spark, paths)
        .groupBy(F.input_file_name().alias("file"))
        .agg(F.sum(bad).alias("n"))
        .where(F.col("n") > 0)
        .collect()
    )
    return {unquote(urlparse(r["file"]).path): int(r["n"]) for r in rows}


def read_publications(spark: SparkSession, run: RunDir) -> DataFrame | None:
    """The publication workload, ``attrs`` as JSON text; lines without a ``pub_id`` are skipped."""
    if not run.publications_file.exists():
        return None
    from pyspark.sql import functions as F

    df = spark.read.schema(PUBLICATION_DDL).json(str(run.publications_file))
    return df.where(F.col("pub_id").isNotNull())
