"""Traffic quality per broker, from the events and the oracle's interested brokers, in one action.

A visit (``notif_in`` from another broker) is *relay-only* when the receiving broker hosts no
subscriber the publication matches. A forwarded copy X→Y is *useful* when Y hosts a matching
subscriber or forwarded it on over a useful link (:mod:`scotbed.analysis.forwarding` states the
rule in plain Python); the rest is false-positive traffic.

Up to the collected bound the fixpoint runs in numpy over every publication at once
(:func:`local_tally`); above it, as Spark higher-order functions over each publication's copies.
Spark interprets those functions, so they work on numbers: every broker is an index into the run's
broker list, a copy is one ``int`` (sender × K + receiver) and a set of brokers is a bit mask (an
array of 63-bit words), about half the time of arrays of broker names and copies as structs
(figures: benchmarks/README.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from scotbed import contract
from scotbed.analysis.metrics import of, sql_string, to_broker

WORD_BITS = 63  # bits of a mask word: a long's, less the sign's


class BrokerIndex:
    """The run's brokers as indices 0..n-1 in SQL; every other name (a broker that neither logged nor
    hosts a subscriber, or a null) is index n, which is never interested and never marked useful."""

    def __init__(self, brokers: Iterable[str]) -> None:
        self.names = sorted(set(brokers))
        self.unknown = len(self.names)
        self.k = self.unknown + 1  # a copy is sender * k + receiver
        self.words = self.k // WORD_BITS + 1
        pairs = ", ".join(f"{sql_string(n)}, {i}" for i, n in enumerate(self.names))
        self._map = f"map({pairs})" if pairs else "map()"

    def of(self, name: str) -> str:
        """SQL: the index of the broker named by the expression ``name``."""
        return f"coalesce(try_element_at(CAST({self._map} AS MAP<STRING, INT>), {name}), {self.unknown})"

    def has(self, mask: str, i: str) -> str:
        """SQL: whether broker ``i`` is in ``mask``."""
        return f"(shiftright({mask}[{i} DIV {WORD_BITS}], {i} % {WORD_BITS}) & 1 = 1)"

    def add(self, mask: str, i: str) -> str:
        """SQL: ``mask`` with broker ``i``."""
        word, bit = f"{i} DIV {WORD_BITS}", f"shiftleft(1L, {i} % {WORD_BITS})"
        return f"transform({mask}, (w, j) -> IF(j = {word}, w | {bit}, w))"

    def mask_of(self, index: str) -> Column:
        """An aggregate: the mask of the brokers ``index`` (SQL) names in the group."""
        bit = f"shiftleft(1L, {index} % {WORD_BITS})"
        words = [F.expr(f"bit_or(IF({index} DIV {WORD_BITS} = {w}, {bit}, 0L))") for w in range(self.words)]
        return F.array(*words)


def _useful(ix: BrokerIndex) -> str:
    """SQL: the useful brokers' mask from ``interested`` and ``copies``, passes until none adds one
    (each pass that changes adds a sender, so the copies, plus the pass that sees no change, bound
    the passes)."""
    sender, receiver = f"(c DIV {ix.k})", f"(c % {ix.k})"
    add = f"{ix.has('a', receiver)} AND NOT {ix.has('a', sender)} AND {sender} < {ix.unknown}"

    def one_pass(mask: str) -> str:
        return f"aggregate(copies, {mask}, (a, c) -> IF({add}, {ix.add('a', sender)}, a))"

    return (
        f"aggregate(sequence(0, size(copies)), named_struct('m', {one_pass('interested')}, 'p', interested), "
        f"(st, i) -> IF(st.m = st.p, st, named_struct('m', {one_pass('st.m')}, 'p', st.m))).m"
    )


# What a tallied visit or copy was, the low two bits of its code (the broker's index is the rest).
VISIT, RELAY_ONLY, USEFUL_IM, FALSE_POSITIVE_IM = range(4)


def _tallied(ix: BrokerIndex) -> str:
    """SQL: each visit and forwarded copy of a publication as one int, broker index × 4 + its kind."""
    visit = f"v * 4 + IF({ix.has('interested', 'v')}, {VISIT}, {RELAY_ONLY})"
    copy = f"(c DIV {ix.k}) * 4 + IF({ix.has('useful', f'c % {ix.k}')}, {USEFUL_IM}, {FALSE_POSITIVE_IM})"
    return f"concat(transform(visits, v -> {visit}), transform(copies, c -> {copy}))"


def traffic_per_broker(
    events: DataFrame, interested: DataFrame, brokers: Iterable[str], collect: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(relay, false_positive_traffic) per broker.

    ``interested`` has (pub_id, broker) for every broker hosting a subscriber the publication
    matches, repeated or not; ``brokers`` names every broker that logged or hosts a subscriber.
    relay: node, visits, relay_only. false_positive_traffic: node, ims, fp_ims.

    With ``collect`` the visits, copies and interested brokers come to the driver as Arrow (an int
    code and the pub_id a row) and :func:`local_tally` runs the fixpoint in numpy, faster than Spark's
    higher-order functions on the same tables. Else one
    group-by of the copies and the interested brokers together, the fixpoint as Spark higher-order
    functions.
    """
    ix = BrokerIndex(brokers)
    hop = of(events, contract.NOTIF_IN, contract.NOTIF_OUT).where(to_broker())
    node, link = F.expr(ix.of("node")), F.expr(ix.of("link"))
    rows = hop.select(
        "pub_id",
        F.when(F.col("ev") == contract.NOTIF_IN, node).alias("visit"),
        F.when(F.col("ev") == contract.NOTIF_OUT, node * ix.k + link).alias("copy"),
    ).unionByName(
        interested.select("pub_id", F.expr(ix.of("broker")).alias("wanted")), allowMissingColumns=True
    )
    if collect:
        return _tables(local_tally(rows.toArrow(), ix), ix)
    per_pub = rows.groupBy("pub_id").agg(
        F.collect_list("visit").alias("visits"),
        F.collect_list("copy").alias("copies"),
        ix.mask_of("wanted").alias("interested"),
    )
    useful = per_pub.select("visits", "copies", "interested", F.expr(_useful(ix)).alias("useful"))
    tally = cast(
        pd.DataFrame,
        useful.select(F.explode(F.expr(_tallied(ix))).alias("code")).groupBy("code").count().toPandas(),
    )
    return _tables(tally, ix)


def local_tally(rows: pa.Table, ix: BrokerIndex) -> pd.DataFrame:
    """The codes and counts :func:`_tallied` gives, from the rows (pub_id, visit, copy, wanted) in numpy.

    Each (publication, broker) is one slot of a boolean array, so the interested and the useful
    brokers of every publication are two arrays and a fixpoint pass is a few vector operations over
    all copies at once. Passes run until none adds a sender (at most one per copy, as in Spark's).
    """
    pub = pc.dictionary_encode(rows["pub_id"].combine_chunks(), null_encoding="encode")
    slot = pub.indices.to_numpy(zero_copy_only=False).astype(np.int64) * ix.k

    def present(name: str) -> tuple[np.ndarray, np.ndarray]:
        col = rows[name].combine_chunks()
        keep = col.is_valid().to_numpy(zero_copy_only=False)
        return slot[keep], col.drop_null().to_numpy().astype(np.int64)

    (v_slot, visit), (c_slot, copy), (w_slot, wanted) = present("visit"), present("copy"), present("wanted")
    sender, receiver = np.divmod(copy, ix.k)
    keys = [v_slot + visit, c_slot + sender, c_slot + receiver, w_slot + wanted]
    (at_visit, at_sender, at_receiver, at_wanted), n = _slots(keys, len(pub.dictionary) * ix.k)
    interested = np.zeros(n, dtype=bool)
    interested[at_wanted] = True
    useful = interested.copy()
    relays = sender < ix.unknown
    for _ in range(len(copy) + 1):
        add = relays & useful[at_receiver] & ~useful[at_sender]
        if not add.any():
            break
        useful[at_sender[add]] = True
    codes = np.concatenate(
        [
            visit * 4 + np.where(interested[at_visit], VISIT, RELAY_ONLY),
            sender * 4 + np.where(useful[at_receiver], USEFUL_IM, FALSE_POSITIVE_IM),
        ]
    )
    code, count = np.unique(codes, return_counts=True)
    return pd.DataFrame({"code": code, "count": count})


DENSE_SLOTS = 1 << 27  # (publication, broker) slots held densely: 128 MB a boolean array


def _slots(keys: list[np.ndarray], n_slots: int) -> tuple[list[np.ndarray], int]:
    """The (publication, broker) keys as indices into boolean arrays, and the arrays' length: the keys
    themselves up to :data:`DENSE_SLOTS` slots, else their ranks among the keys that occur (many
    brokers, where a dense array would be mostly slots no row names)."""
    if n_slots <= DENSE_SLOTS:
        return keys, n_slots
    distinct, rank = np.unique(np.concatenate(keys), return_inverse=True)
    return np.split(rank, np.cumsum([len(k) for k in keys])[:-1]), len(distinct)


def _tables(tally: pd.DataFrame, ix: BrokerIndex) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The (relay, false_positive_traffic) tables of the tallied codes and their counts."""
    node, kind = np.divmod(tally["code"].to_numpy(dtype="int64"), 4)
    n = tally["count"].to_numpy(dtype="int64")
    flags = {
        "visits": kind <= RELAY_ONLY,
        "relay_only": kind == RELAY_ONLY,
        "ims": kind >= USEFUL_IM,
        "fp_ims": kind == FALSE_POSITIVE_IM,
    }
    both = (
        pd.DataFrame({"node": node, **{k: np.where(f, n, 0) for k, f in flags.items()}}).groupby("node").sum()
    )
    both.index = [ix.names[i] if i < ix.unknown else None for i in both.index]
    both = both.rename_axis("node").reset_index().sort_values("node", kind="stable").reset_index(drop=True)
    both = both.astype({c: "int64" for c in flags})

    def part(seen: str, kept: list[str]) -> pd.DataFrame:
        return both[both[seen] > 0][["node", *kept]].reset_index(drop=True)

    return part("visits", ["visits", "relay_only"]), part("ims", ["ims", "fp_ims"])
