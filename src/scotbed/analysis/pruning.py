"""The unsubscription-burst metrics of the selective-pruning paper (§V-A), on a tiered topology.

Only a run on a tiered factor (:func:`scotbed.topology.tiered`: core brokers a–e) gets them.

- *released subscription messages* per broker (the paper's triggered NRS messages, Fig. 7 (d)): the
  messages a broker sent from the first client ``unsubscribe`` on (a mobile monitor's move is no
  start) that carry a subscription, but the monitors' own re-subscriptions: every ``sub_out``, and
  every ``unsub_out`` that packs subscriptions (``packed``, covering-packing sends the subscriptions an
  unsubscription releases inside it). A packed message counts once, as §V-B counts them: packing,
  "by combining the NRS messages associated with an unsubscribe operation, reduces this to fewer
  than 300 messages" (Fig. 7 (d)), so the figure counts messages, one per hop each traverses
  (§V-A: "the number of hops traversed by the NRS subscription messages"), at the sender;
- *released subscriptions* per broker: the subscriptions those messages carry, each packed one
  counted (§V-A: with packing "each subscription or unsubscription still needs to be processed
  individually by the recipient brokers"); without packing it equals the message count.
  In a run whose other subscriptions all precede its unsubscriptions (the burst scenario,
  :mod:`scotbed.workloads.pruning_burst`) both count exactly what the unsubscriptions released;
- *core queues* over time (from the first unsubscription, ``t_s``): each core broker's input queue
  (``queue`` with link ""), its longest since the previous sample (``peak``; a log without it
  gives the sampled length), and the longest output queue there. Where the core brokers are slow
  to process (``brokers.service_us_at``) the burst waits in their input queues, as in the paper;
  with capacity-limited links it waits at the sender's output queue instead;
- *probe delay*: the delivery delay of the probe publications (``pub_id`` starting ``probe``);
- *core routing tables*: the last sampled table size of each core broker;
- *publication traffic* of the core brokers and of the core and inner brokers together (Fig. 7 (c)):
  the publication copies they sent over the whole run and the share of them that were false
  positives, from the ``traffic`` section's per-broker table (:mod:`scotbed.analysis.traffic`, the one
  home of what a false-positive copy is); absent when the oracle could not run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from scotbed import contract, topology
from scotbed.analysis.metrics import distribution, input_longest, of
from scotbed.workloads.pruning_burst import MONITOR_PREFIX, PROBE_PREFIX


def core_brokers(topology_doc: Mapping[str, Any]) -> list[str]:
    """The tiered core a–e, in chain order, from a run's ``topology.json``; [] when its factor is not
    tiered. Broker ids alone do not tell: the demo's path a–f has brokers b-a-0 … b-e-0 too."""
    if topology_doc.get("acyclic") not in topology.TIERED_FACTORS:
        return []
    return [topology.broker_id(v, 0) for v in topology.TIERED_CORE]


def inner_brokers(topology_doc: Mapping[str, Any]) -> list[str]:
    """The tiered inner brokers ``n<k>`` (below the core, above the edges: :func:`scotbed.topology.tiered`),
    in vertex order; [] when the factor is not tiered."""
    if topology_doc.get("acyclic") not in topology.TIERED_FACTORS:
        return []
    return [str(b["id"]) for b in topology_doc["brokers"] if str(b["vertex"]).startswith("n")]


def publication_traffic(fp_traffic: pd.DataFrame, brokers: Sequence[str]) -> dict[str, Any]:
    """copies, false_positive_share: the publication copies ``brokers`` sent and the share of them that
    were false positives, from the ``traffic`` section's table (node, ims, fp_ims)."""
    mine = fp_traffic[fp_traffic["node"].isin(list(brokers))]
    copies, fp = int(mine["ims"].sum()), int(mine["fp_ims"].sum())
    return {"copies": copies, "false_positive_share": fp / copies if copies else 0.0}


def first_unsubscribe_ns(sub_table: pd.DataFrame) -> int | None:
    """When the burst starts: the first client unsubscription but a mobile monitor's move, from the
    subscription facts every run collects (each sub_id's first ``unsubscribe``; no query of its own)."""
    ids = sub_table["sub_id"]
    clients = sub_table[ids.notna() & ~ids.astype(str).str.startswith(MONITOR_PREFIX)]
    first = clients["unsubscribe_ns"].min()
    return None if pd.isna(first) else int(first)


def released_per_broker(events: DataFrame, since_ns: int) -> pd.DataFrame:
    """node, released, subscriptions: the messages carrying subscriptions each broker sent from
    ``since_ns`` on, and the subscriptions they carried (module docstring)."""
    df = of(events, contract.SUB_OUT, contract.UNSUB_OUT).where(F.col("ts_ns") >= since_ns)
    own = (F.col("ev") == contract.SUB_OUT) & ~F.col("sub_id").startswith(MONITOR_PREFIX)
    carried = F.when(own, 1).otherwise(0) + F.coalesce(F.col("packed"), F.lit(0))
    df = df.select("node", carried.alias("carried")).where(F.col("carried") > 0)
    per = df.groupBy("node").agg(F.count("*").alias("released"), F.sum("carried").alias("subscriptions"))
    out = cast(pd.DataFrame, per.toPandas()).astype({"released": "int64", "subscriptions": "int64"})
    return out.sort_values("node", kind="stable").reset_index(drop=True)


def core_queue_series(events: DataFrame, core: Sequence[str], since_ns: int) -> pd.DataFrame:
    """node, ts_ns, t_s, input_len, max_output_len: each core broker's queue samples over time."""
    q = of(events, contract.QUEUE).where(F.col("node").isin(list(core)))
    is_input = (F.col("link") == "") | F.col("link").isNull()
    per = q.groupBy("node", "ts_ns").agg(
        F.max(F.when(is_input, input_longest())).alias("input_len"),
        F.max(F.when(~is_input, F.col("len"))).alias("max_output_len"),
    )
    pdf = cast(pd.DataFrame, per.toPandas()).fillna(0)
    pdf = pdf.astype({"input_len": "int64", "max_output_len": "int64"})
    pdf["t_s"] = (pdf["ts_ns"] - since_ns) / 1e9
    return pdf.sort_values(["node", "ts_ns"], kind="stable").reset_index(drop=True)


def probe_delay(deliveries: DataFrame) -> dict[str, Any]:
    return distribution(deliveries.where(F.col("pub_id").startswith(PROBE_PREFIX)), "delay_ms")


def block(
    released: pd.DataFrame,
    queues: pd.DataFrame,
    tables: pd.DataFrame,
    core: Sequence[str],
    probe: dict[str, Any],
    fp_traffic: pd.DataFrame | None = None,
    inner: Sequence[str] = (),
) -> dict[str, Any]:
    """The summary block from the per-broker tables (pure); ``fp_traffic`` is the ``traffic`` section's
    (node, ims, fp_ims), None when the oracle could not run."""

    def per_core(column: str) -> dict[str, int]:
        got = {str(n): int(v) for n, v in zip(released["node"], released[column], strict=True)}
        return {n: got.get(n, 0) for n in core}

    final = {n: int(s) for n, s in zip(tables["node"], tables["final_size"], strict=True)}
    return {
        "core": list(core),
        "released_total": int(released["released"].sum()),
        "released_per_core": per_core("released"),
        "released_subscriptions_per_core": per_core("subscriptions"),
        "core_input_queue_max": int(queues["input_len"].max()) if len(queues) else 0,
        "core_output_queue_max": int(queues["max_output_len"].max()) if len(queues) else 0,
        "probe_delay_ms": probe,
        "core_table_final_mean": sum(final.get(n, 0) for n in core) / len(core) if core else 0.0,
        "table_final_total": sum(final.values()),
    } | (
        {}
        if fp_traffic is None
        else {
            "publication_traffic_core": publication_traffic(fp_traffic, core),
            "publication_traffic_core_inner": publication_traffic(fp_traffic, [*core, *inner]),
        }
    )
