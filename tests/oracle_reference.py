"""The oracle's check of pairs a test holds, in Arrow with no Spark: the reference the property tests
run and the Spark check (:func:`scotbed.analysis.oracle.check`) is compared with."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from scotbed.analysis import oracle
from scotbed.analysis.oracle import Episode


def check_rows(
    eps: Iterable[Episode],
    publications: pa.RecordBatch,
    received: pa.Table,
    engine: str = "naive",
    first_n: int = 10,
) -> tuple[dict[str, Any], pa.Table]:
    """The whole check of publications and receives a caller holds: the publications (pub_id, intended,
    sent, attrs as JSON text) matched by ``oracle.expected_batches``, checked by :func:`check_local`."""
    exp = oracle.Expectation(eps, engine)
    expected = pa.Table.from_batches(
        list(oracle.expected_batches([publications], exp)), schema=oracle.arrow_schema(oracle.EXPECTED_DDL)
    )
    return check_local(expected, received, first_n)


def check_local(expected: pa.Table, received: pa.Table, first_n: int = 10) -> tuple[dict[str, Any], pa.Table]:
    """:func:`~scotbed.analysis.oracle.check` of pairs a caller holds: the expected pairs (``EXPECTED_DDL``)
    against the receives (pub_id, sub_id, recv_ns). The same counts and first offenders, and the
    offenders (``OFFENDERS_DDL``) in their order, from one Arrow group-by."""
    pairs = _local_pairs(expected, received)
    copies, exp, trans = pairs["copies"], pairs["expected"], pairs["in_transition"]
    got = pc.greater(copies, 0)
    flags = {
        "missing": pc.and_(pc.and_(exp, pc.invert(trans)), pc.equal(copies, 0)),
        "false_positive": pc.and_(pc.invert(exp), got),
        "duplicate": pc.greater(copies, 1),
    }

    def n(mask: Any) -> int:
        return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)

    counts = {
        "expected_deliveries": n(pc.and_(exp, pc.invert(trans))),
        "delivered": int(pc.sum(copies).as_py() or 0),
        "missing": n(flags["missing"]),
        "duplicates": int(pc.sum(pc.if_else(flags["duplicate"], pc.subtract(copies, 1), 0)).as_py() or 0),
        "false_positives": n(flags["false_positive"]),
        "in_transition": n(trans),
        "in_transition_delivered": n(pc.and_(trans, got)),
    }
    for flag, mask in flags.items():
        pairs = pairs.append_column(flag, mask)
    offenders = pairs.filter(pc.or_(pc.or_(flags["missing"], flags["false_positive"]), flags["duplicate"]))
    order = [(k, "ascending", "at_start") for k in ("t_ns", "pub_id", "sub_id")]
    offenders = offenders.take(pc.sort_indices(offenders, sort_keys=order)).cast(
        oracle.arrow_schema(oracle.OFFENDERS_DDL)
    )

    def first(flag: str, count: str) -> list[dict[str, Any]]:
        if not counts[count]:
            return []
        rows = offenders.filter(offenders[flag]).slice(0, first_n).to_pylist()
        return [{"pub_id": r["pub_id"], "sub_id": r["sub_id"], "copies": int(r["copies"])} for r in rows]

    return oracle.result_of(counts, first), offenders


def _local_pairs(expected: pa.Table, received: pa.Table) -> pa.Table:
    """The oracle's pairs in Arrow: the expected and the received pairs as one table grouped by pair."""

    def side(rows: pa.Table, receives: bool, **times: Any) -> pa.Table:
        """One side of the union: a receive is one copy of its pair, an expected pair one expectation."""
        k = rows.num_rows
        none = {"recv_ns": pa.nulls(k, pa.int64()), "intended_ns": pa.nulls(k, pa.int64())}
        return pa.table(
            {
                "pub_id": pc.cast(rows["pub_id"], pa.string()),
                "sub_id": pc.cast(rows["sub_id"], pa.string()),
                "copy": pa.array(np.full(k, int(receives), dtype=np.int64)),
                "expectation": pa.array(np.full(k, int(not receives), dtype=np.int8)),
                **none,
                **times,
                "in_transition": pa.nulls(k, pa.bool_()) if receives else rows["in_transition"],
            }
        )

    both = pa.concat_tables(
        [
            side(received, True, recv_ns=pc.cast(received["recv_ns"], pa.int64())),
            side(expected, False, intended_ns=expected["intended_ns"]),
        ]
    )
    g = both.group_by(["pub_id", "sub_id"]).aggregate(
        [
            ("copy", "sum"),
            ("recv_ns", "min"),
            ("intended_ns", "min"),
            ("expectation", "max"),
            ("in_transition", "any"),
        ]
    )
    return pa.table(
        {
            "pub_id": g["pub_id"],
            "sub_id": g["sub_id"],
            "t_ns": pc.coalesce(g["intended_ns_min"], g["recv_ns_min"]),
            "copies": g["copy_sum"],
            "expected": pc.equal(g["expectation_max"], 1),
            "in_transition": pc.fill_null(g["in_transition_any"], False),
        }
    )
