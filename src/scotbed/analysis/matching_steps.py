"""Matching steps against hop count (Gryphon's link matching): the PST nodes a broker's search visited for
a notification (``steps`` on ``match``), by how many hops the notification had travelled to that broker
(``hops`` on the broker's ``notif_in`` of it).

With link matching a broker past the publisher's searches only the subtree its initialisation mask
leaves Maybe, so the steps per match should fall with the hop count; with a plain PST they do not.
Only a run whose engine logs steps (``pst``, ``link-matching``) gets the section.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from scotbed import contract
from scotbed.analysis.metrics import of


@dataclass(frozen=True)
class MatchingSteps:
    """``steps_mean`` over every match; ``by_hops``: hops -> matches, mean and max steps there."""

    block: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any] | None:
        return self.block


def steps_by_hops(events: DataFrame) -> MatchingSteps:
    """Join each ``match`` with the ``notif_in`` of the same notification at the same broker."""
    matches = of(events, contract.MATCH).where(F.col("steps").isNotNull()).select("node", "pub_id", "steps")
    arrivals = of(events, contract.NOTIF_IN).groupBy("node", "pub_id").agg(F.min("hops").alias("hops"))
    joined = matches.join(arrivals, ["node", "pub_id"], "left").fillna({"hops": -1})
    rows = (
        joined.groupBy("hops")
        .agg(F.count("*").alias("matches"), F.mean("steps").alias("mean"), F.max("steps").alias("max"))
        .orderBy("hops")
        .collect()
    )
    if not rows:
        return MatchingSteps()
    total = sum(int(r["matches"]) for r in rows)
    mean = sum(float(r["mean"]) * int(r["matches"]) for r in rows) / total
    by_hops = {
        str(int(r["hops"])): {
            "matches": int(r["matches"]),
            "steps_mean": round(float(r["mean"]), 3),
            "steps_max": int(r["max"]),
        }
        for r in rows
    }
    return MatchingSteps({"matches": total, "steps_mean": round(mean, 3), "by_hops": by_hops})
