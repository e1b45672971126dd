"""Client ``receive`` lines that do not parse: named, and not counted as missing deliveries.

A receive line that was cut or garbled (a full disk, a killed writer) still
shows that the client got *something*; without this the oracle would call the
pair missing and blame the routing. Each such line is kept (its text, cut to
:data:`SHOWN_CHARS`), its ``pub_id``/``sub_id`` are recovered where the text
still holds them, and a missing pair that matches one is counted as
``unreadable_receives`` instead of ``missing``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scotbed import contract
from scotbed.analysis.events import CORRUPT

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

RECEIVE = rf'"ev"\s*:\s*"{contract.RECEIVE}"'
SHOWN_CHARS = 200
SHOWN_LINES = 20
PAIR_DDL = "pub_id STRING, sub_id STRING"


def is_receive() -> Column:
    """True for a malformed line that looks like a client receive (null for a line that parsed)."""
    from pyspark.sql import functions as F

    return F.col(CORRUPT).rlike(RECEIVE)


def receives(spark: SparkSession, malformed: DataFrame | None) -> tuple[DataFrame, dict[str, Any]]:
    """(recovered (pub_id, sub_id) pairs, {"count", "lines"}) of the unreadable receive lines among
    ``malformed`` (the lines of :func:`~scotbed.analysis.events.corrupt_lines` that are not valid events;
    None for a run without any)."""
    from pyspark.sql import functions as F

    if malformed is None:
        return spark.createDataFrame([], PAIR_DDL), {"count": 0, "lines": []}
    bad = malformed.where(is_receive()).select(
        F.col(CORRUPT).alias("text"),
        F.regexp_extract(CORRUPT, r'"pub_id"\s*:\s*"([^"]+)"', 1).alias("pub_id"),
        F.regexp_extract(CORRUPT, r'"sub_id"\s*:\s*"([^"]+)"', 1).alias("sub_id"),
    )
    count = bad.count()
    lines = [r["text"][:SHOWN_CHARS] for r in bad.limit(SHOWN_LINES).collect()] if count else []
    pairs = bad.where((F.col("pub_id") != "") & (F.col("sub_id") != "")).select("pub_id", "sub_id").distinct()
    return pairs, {"count": count, "lines": lines}


def excuse(
    correctness: dict[str, Any], pairs: DataFrame, recovered: DataFrame, found: dict[str, Any]
) -> None:
    """Count missing pairs an unreadable receive line names as ``unreadable_receives``, not ``missing``.

    ``pairs`` holds at least the missing ones; ``found`` is :func:`receives`'s count (no Spark job
    when no receive line was unreadable or nothing is missing).
    """
    from pyspark.sql import functions as F

    n = 0
    if found["count"] and correctness["missing"]:
        n = pairs.where(F.col("missing")).join(recovered, ["pub_id", "sub_id"], "left_semi").count()
    correctness["unreadable_receives"] = n
    if n:
        correctness["missing"] -= n
        correctness["ok"] = correctness["missing"] == 0 and not correctness["duplicates"]
        correctness["ok"] = correctness["ok"] and not correctness["false_positives"]


def describe(summary: dict[str, Any]) -> str | None:
    """One warning naming the unreadable receive lines of a summary; None when there are none."""
    found = summary.get("events", {}).get("unreadable_receive") or {}
    if not found.get("count"):
        return None
    excused = summary.get("correctness", {}).get("unreadable_receives", 0)
    shown = " | ".join(found["lines"][:3])
    return (
        f"{found['count']} client receive line(s) could not be read ({excused} expected deliveries they name "
        f"are counted as unreadable, not missing): {shown}"
    )
