"""The sampled series of a run: queue lengths and routing-table sizes over time, binned.

Brokers sample their queues and routing tables (``queue`` and ``table`` events); the series keep
each bin's maximum (and the queues' mean congestion element), so a long run's plots stay within
:data:`MAX_BINS` points per line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from scotbed import contract
from scotbed.analysis.metrics import of, sorted_as_spark

MIN_BIN_NS = 250_000_000
MAX_BINS = 400


def _is(ev: str) -> Column:
    return F.col("ev") == ev


def bins(facts: pd.DataFrame, ev: str) -> tuple[int, int] | None:
    """(first sample ns, bin width ns) of a sampled event: at least 250 ms, at most 400 bins."""
    rows = facts[facts["ev"] == ev]
    if not len(rows) or rows["t_min"].isna().all():
        return None
    t0, t1 = int(rows["t_min"].min()), int(rows["t_max"].max())
    return t0, max(MIN_BIN_NS, (t1 - t0) // MAX_BINS + 1)


QUEUE_SERIES_COLUMNS = ["node", "link", "t_s", "max_len", "mean_ce", "direction"]
TABLE_SERIES_COLUMNS = ["node", "t_s", "size"]


def sample_series(
    events: DataFrame, queue_bins: tuple[int, int] | None, table_bins: tuple[int, int] | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(queue series, table series), binned (:func:`bins`), from one group-by of both samples.

    Queue length over time per broker and link (``link == ""`` is the input queue): each bin's
    maximum length and mean congestion element. Routing-table size over time per broker: each bin's
    largest size. ``t_s`` is the bin start relative to the first sample of its kind. Both series
    in one query: a query each would cost a scan and a job more.
    """
    binned = [
        (ev, b) for ev, b in ((contract.QUEUE, queue_bins), (contract.TABLE, table_bins)) if b is not None
    ]
    if not binned:
        return pd.DataFrame(columns=QUEUE_SERIES_COLUMNS), pd.DataFrame(columns=TABLE_SERIES_COLUMNS)

    def per_kind(value: Callable[[int, int], Column]) -> Column:
        (ev, b), *rest = binned
        column = F.when(_is(ev), value(*b))
        for ev, b in rest:
            column = column.when(_is(ev), value(*b))
        return column

    bin_of = per_kind(lambda t0, width: F.floor((F.col("ts_ns") - t0) / width))
    start_of = per_kind(lambda _, width: F.col("bin") * (width / 1e9))
    link = F.when(_is(contract.QUEUE), F.coalesce(F.col("link"), F.lit(""))).otherwise("")
    rows = cast(
        pd.DataFrame,
        of(events, *(ev for ev, _ in binned))
        .groupBy("ev", "node", link.alias("link"), bin_of.alias("bin"))
        .agg(F.max("len").alias("max_len"), F.mean("ce").alias("mean_ce"), F.max("size").alias("size"))
        .select("ev", "node", "link", start_of.alias("t_s"), "max_len", "mean_ce", "size")
        .toPandas(),
    )
    queues = _as_collected(rows, contract.QUEUE, queue_bins, ["max_len"], QUEUE_SERIES_COLUMNS)
    queues["direction"] = ["input" if x == "" else "output" for x in queues["link"]]
    tables = _as_collected(rows, contract.TABLE, table_bins, ["size"], TABLE_SERIES_COLUMNS)
    return (
        sorted_as_spark(queues[QUEUE_SERIES_COLUMNS], ["node", "link", "t_s"]),
        sorted_as_spark(tables[TABLE_SERIES_COLUMNS], ["node", "t_s"]),
    )


def _as_collected(
    rows: pd.DataFrame, ev: str, b: tuple[int, int] | None, longs: list[str], columns: list[str]
) -> pd.DataFrame:
    """One kind's rows of a mixed collect (none when it was not binned), its ``longs`` typed as a query
    of that kind alone collects them: int64 without a null, float64 with one."""
    if b is None:
        return pd.DataFrame(columns=columns)
    mine = rows[rows["ev"] == ev].reset_index(drop=True)
    return mine.astype({c: "int64" for c in longs if mine[c].notna().all()})
