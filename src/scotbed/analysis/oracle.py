"""The delivery correctness oracle: who should have received each publication, and who did.

Expected deliveries are every (publication, subscription) pair that matches
under :mod:`scotbed.filters` semantics (evaluated by a shared
:mod:`scotbed.matching` engine, never re-implemented here), for the
subscriptions active at the publication's intended time.

A subscription has two *transition* windows: from its ``subscribe`` until its
propagation ended (when the wave its subscribe started had first reached each
of its brokers: :mod:`scotbed.analysis.propagation`; a later re-forward of the
settled subscription never reopens the window), and from its ``unsubscribe`` until the
last ``unsub_in``. Each window lasts at least
``settle_ns`` (the configurable settle bound, for runs whose broker logs
are partial or whose clocks drift). A publication whose issue interval
[min(intended, sent), max(intended, sent)] overlaps a transition window is
counted apart as *in transition*: neither missing nor a false positive when
delivered or not. Duplicates are errors in every phase.

Sub ids are unique per subscription (the workload contract); a subscribe
after an unsubscribe of the same id opens a new episode.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import astuple, dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from scotbed.analysis import jsontext, propagation
from scotbed.filters import Attributes, Filter
from scotbed.matching import make_matcher
from scotbed.matching.columnar import Columns, exact_filter
from scotbed.matching.counting import CountingMatcher

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from scotbed.analysis.pub_arrow import Publications

FOREVER = 2**63 - 1
_NONE = np.zeros(0, dtype=np.int64)
EXPECTED_DDL = (
    "pub_id STRING, sub_id STRING, subscriber STRING, broker STRING, "
    "intended_ns BIGINT, in_transition BOOLEAN"
)
# the oracle's offending pairs (contract.OFFENDERS), as :func:`check` and :func:`check_local` flag them
OFFENDERS_DDL = (
    "pub_id STRING, sub_id STRING, t_ns BIGINT, copies BIGINT, expected BOOLEAN, in_transition BOOLEAN, "
    "missing BOOLEAN, false_positive BOOLEAN, duplicate BOOLEAN"
)
COUNTS = (
    "expected_deliveries",
    "delivered",
    "missing",
    "duplicates",
    "false_positives",
    "in_transition",
    "in_transition_delivered",
)


@dataclass(frozen=True)
class Episode:
    """One subscription's life: active on [start_ns, end_ns), in transition on the two settle windows."""

    sub_id: str
    subscriber: str
    broker: str
    filter_json: str
    start_ns: int
    sub_settled_ns: int
    end_ns: int = FOREVER
    unsub_settled_ns: int = FOREVER


def episodes(
    ops: Iterable[Mapping[str, Any]],
    sub_settled: Mapping[str, int | Sequence[int]],
    last_unsub_in: Mapping[str, int],
    client_subscribe: Mapping[str, int] | None = None,
    client_unsubscribe: Mapping[str, int] | None = None,
    settle_ns: int = 0,
) -> list[Episode]:
    """Subscription episodes from the workload's ``subscriptions.jsonl`` lines and the propagation ends.

    ``sub_settled``: sub_id -> the end of its subscribe's propagation, or of each subscribe's in order
    (:func:`scotbed.analysis.propagation.wave_ends`; the k-th subscribe of a sub_id takes the k-th, the
    last when there are fewer). The start/end time is the client's (un)subscribe event when logged,
    else the workload's ``ts_ns``.
    """
    client_subscribe = client_subscribe or {}
    client_unsubscribe = client_unsubscribe or {}
    open_: dict[str, Episode] = {}
    done: list[Episode] = []
    subscribes: dict[str, int] = {}
    for op in sorted(ops, key=lambda o: int(o["ts_ns"])):
        sid = str(op["sub_id"])
        if op["op"] == "subscribe":
            t = int(client_subscribe.get(sid, op["ts_ns"]))
            k = subscribes[sid] = subscribes.get(sid, -1) + 1
            settled = max(t + settle_ns, _kth(sub_settled.get(sid), k, t))
            flt = Filter.from_json(op["filter"], where=f"subscription {sid}")
            open_[sid] = Episode(
                sid,
                str(op.get("subscriber", "")),
                str(op.get("broker", "")),
                json.dumps(flt.to_json()),
                t,
                settled,
            )
        elif op["op"] == "unsubscribe":
            ep = open_.pop(sid, None)
            if ep is None:
                continue
            t = int(client_unsubscribe.get(sid, op["ts_ns"]))
            settled = max(t + settle_ns, int(last_unsub_in.get(sid, t)))
            done.append(replace(ep, end_ns=t, unsub_settled_ns=settled))
        else:
            raise ValueError(f"subscriptions.jsonl: unknown op {op['op']!r} for {sid}")
    return done + list(open_.values())


def episodes_of_logs(
    ops: Iterable[Mapping[str, Any]],
    traffic: Sequence[propagation.Row],
    client_subscribe: Mapping[str, int] | None = None,
    client_unsubscribe: Mapping[str, int] | None = None,
    settle_ns: int = 0,
) -> list[Episode]:
    """:func:`episodes` with the propagation ends traced from the brokers' subscription traffic (rows
    of :data:`~scotbed.analysis.propagation.EVENTS`: :func:`~scotbed.analysis.propagation.wave_ends`)."""
    return episodes(
        ops,
        propagation.wave_ends(traffic),
        propagation.unsub_ends(traffic),
        client_subscribe,
        client_unsubscribe,
        settle_ns,
    )


def _kth(ends: int | Sequence[int] | None, k: int, default: int) -> int:
    """The k-th of ``ends`` (the last when there are fewer; the one when it is a number)."""
    if ends is None:
        return default
    if isinstance(ends, int):
        return ends
    return int(ends[min(k, len(ends) - 1)]) if len(ends) else default


class Expectation:
    """Matches publications against subscription episodes with a shared engine.

    A batch of publications whose values numpy compares exactly is matched as columns
    (:mod:`scotbed.matching.columnar`, one mask per distinct filter), the rest one publication at a time
    by the named engine: the same pairs either way, at a fraction of the per-publication calls.
    """

    def __init__(self, eps: Iterable[Episode], engine: str = "naive") -> None:
        self.episodes = list(eps)
        self.matcher = make_matcher(engine)
        by_filter: dict[str, list[int]] = {}
        for i, e in enumerate(self.episodes):
            self.matcher.add(i, Filter.from_json(json.loads(e.filter_json)))
            by_filter.setdefault(e.filter_json, []).append(i)
        if isinstance(self.matcher, CountingMatcher):
            # every filter is added before the first match: index them now, or a run with fewer
            # filters than the engine's pending bound is matched by scanning each filter
            self.matcher.rebuild()
        self.groups = [
            (Filter.from_json(json.loads(f)), np.asarray(ids, dtype=np.int64)) for f, ids in by_filter.items()
        ]
        self.exact = all(exact_filter(f) for f, _ in self.groups)
        self.windows = np.array(
            [(e.start_ns, e.sub_settled_ns, e.end_ns, e.unsub_settled_ns) for e in self.episodes],
            dtype=np.int64,
        ).reshape(-1, 4)

    def expected(self, intended_ns: int, sent_ns: int, attrs: Attributes) -> Iterator[tuple[Episode, bool]]:
        """(episode, in_transition) for each subscription that should (or may) receive one publication,
        matched by the engine: the reference the columnar batches are tested against."""
        one = np.array([intended_ns], dtype=np.int64), np.array([sent_ns], dtype=np.int64)
        _, eps, transition = self.pairs(*one, [attrs], columnar=False)
        for i, tr in zip(eps.tolist(), transition.tolist(), strict=True):
            yield self.episodes[i], tr

    def matches(self, attrs: Sequence[Attributes], columnar: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(publication index, episode index) of every match in a batch, whatever the episode's times;
        as columns where numpy compares exactly (``columnar``), else by the engine."""
        cols = Columns.of(attrs) if columnar and self.exact else None
        if cols is None:
            hits = [(p, int(i)) for p, a in enumerate(attrs) for i in self.matcher.match(a)]  # type: ignore[call-overload]
            got = np.array(hits, dtype=np.int64).reshape(-1, 2)
            return got[:, 0], got[:, 1]
        return self.column_matches(cols)

    def column_matches(self, cols: Columns) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`matches` of a batch held as columns: one mask per distinct filter (``exact`` only)."""
        pubs: list[np.ndarray] = []
        eps: list[np.ndarray] = []
        for flt, ids in self.groups:
            at = np.flatnonzero(cols.matches(flt))
            pubs.append(np.repeat(at, len(ids)))
            eps.append(np.tile(ids, len(at)))
        return np.concatenate(pubs or [_NONE]), np.concatenate(eps or [_NONE])

    def pairs(
        self, intended: np.ndarray, sent: np.ndarray, attrs: Sequence[Attributes], columnar: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(publication index, episode index, in_transition) of a batch's expected deliveries."""
        return self.in_time(intended, sent, *self.matches(attrs, columnar))

    def in_time(
        self, intended: np.ndarray, sent: np.ndarray, p: np.ndarray, e: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The matches (``p``, ``e``) that are expected deliveries, with their in_transition flag: a match
        whose episode is active at the intended time, or whose transition window overlaps the issue
        interval [min(intended, sent), max(intended, sent)]."""
        t, s = intended[p], sent[p]
        lo, hi = np.minimum(t, s), np.maximum(t, s)
        start, settled, end, unsettled = self.windows[e].T
        transition = (lo <= settled) & (start <= hi) | (end != FOREVER) & (lo <= unsettled) & (end <= hi)
        keep = transition | (start <= t) & (t < end)
        return p[keep], e[keep], transition[keep]


def pick_engine(preferred: str | None) -> str:
    """The engine to use: the preferred one (or ``counting``) when importable, else ``naive``."""
    for name in (preferred, "counting", "naive"):
        if not name:
            continue
        try:
            make_matcher(name)
        except (ImportError, ValueError):
            continue
        return name
    return "naive"


def _expected_batches(
    batches: Iterable[pa.RecordBatch], eps: list[tuple[Any, ...]], engine: str
) -> Iterator[pa.RecordBatch]:
    """One engine per partition; each Arrow batch of publications becomes a batch of expected pairs."""
    return expected_batches(batches, Expectation((Episode(*t) for t in eps), engine))


def expected_batches(batches: Iterable[pa.RecordBatch], exp: Expectation) -> Iterator[pa.RecordBatch]:
    """Each Arrow batch of (pub_id, intended, sent, attrs) becomes a batch of expected pairs, taken from
    the batch's and the episodes' columns by index (no row of Python objects but the attrs)."""
    ep_cols = _episode_columns(exp)
    for batch in batches:
        intended = batch.column("intended").to_numpy()
        sent = batch.column("sent").to_numpy()
        attrs = decode_attrs(batch.column("attrs").to_pylist())
        found = exp.pairs(intended, sent, attrs)
        yield _pairs_batch(batch.column("pub_id"), batch.column("intended"), ep_cols, *found)


def expected_of_columns(pubs: Publications, eps: list[Episode], engine: str) -> pa.Table | None:
    """The expected pairs of the publications Arrow parsed (:mod:`scotbed.analysis.pub_arrow`), matched
    as columns in the driver, as :func:`expected_deliveries` matches them; None when a filter is not
    exact (the engine then matches the decoded attrs)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    exp = Expectation(eps, engine)
    if not exp.exact:
        return None
    t = pubs.table
    intended = pc.coalesce(t["intended_ns"], t["ts_ns"]).combine_chunks()
    sent = pc.coalesce(t["ts_ns"], intended).combine_chunks()
    wanted = pc.and_(t["pub_id"].is_valid(), intended.is_valid()).to_numpy(zero_copy_only=False)
    times = intended.fill_null(0).to_numpy(), sent.fill_null(0).to_numpy()
    p, e, transition = exp.in_time(*times, *exp.column_matches(pubs.attrs))
    keep = wanted[p]
    batch = _pairs_batch(
        t["pub_id"].combine_chunks(), intended, _episode_columns(exp), p[keep], e[keep], transition[keep]
    )
    return pa.Table.from_batches([batch])


def _episode_columns(exp: Expectation) -> list[pa.Array]:
    """The episodes' sub_id, subscriber and broker as Arrow arrays, indexed as ``exp.episodes``."""
    import pyarrow as pa

    return [
        pa.array([getattr(e, k) for e in exp.episodes], pa.string())
        for k in ("sub_id", "subscriber", "broker")
    ]


def _pairs_batch(
    pub_id: pa.Array,
    intended: pa.Array,
    ep_cols: list[pa.Array],
    p: np.ndarray,
    e: np.ndarray,
    transition: np.ndarray,
) -> pa.RecordBatch:
    """The expected pairs (:data:`EXPECTED_DDL`) of publication indices ``p`` and episode indices ``e``."""
    import pyarrow as pa

    at, ep = pa.array(p), pa.array(e)
    arrays = [
        pub_id.take(at),
        *(c.take(ep) for c in ep_cols),
        intended.take(at),
        pa.array(transition, pa.bool_()),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(EXPECTED_DDL))


def decode_attrs(texts: list[str | None]) -> list[Any]:
    """Each publication's attrs JSON, ``{}`` when empty."""
    return list(jsontext.decode(t or "{}" for t in texts))


def arrow_schema(ddl: str) -> pa.Schema:
    """A DDL of this module's (:data:`EXPECTED_DDL`, :data:`OFFENDERS_DDL`) as an Arrow schema."""
    import pyarrow as pa

    types = {"STRING": pa.string(), "BIGINT": pa.int64(), "BOOLEAN": pa.bool_()}
    return pa.schema([(n, types[t]) for n, t in (f.split() for f in ddl.split(", "))])


def expected_deliveries(
    spark: SparkSession, publications: DataFrame, eps: list[Episode], engine: str, in_driver: bool = False
) -> DataFrame:
    """(pub_id, sub_id, subscriber, broker, intended_ns, in_transition): the publications matched
    against the episodes by one shared engine, in the driver or per partition (same function).

    In the driver (``in_driver``, for publications that fit in it) the publications are collected as
    Arrow and the pairs handed back as Arrow: no Python worker starts. Otherwise the episodes are
    broadcast and each partition builds one engine and matches Arrow batches (``mapInArrow``).
    """
    from pyspark.sql import functions as F

    intended = F.coalesce("intended_ns", "ts_ns")
    pubs = publications.select(
        "pub_id", intended.alias("intended"), F.coalesce("ts_ns", intended).alias("sent"), "attrs"
    ).where(F.col("intended").isNotNull())
    if in_driver:
        import pyarrow as pa

        exp = Expectation(eps, engine)
        pairs = expected_batches(pubs.toArrow().to_batches(), exp)
        return spark.createDataFrame(pa.Table.from_batches(list(pairs), schema=arrow_schema(EXPECTED_DDL)))
    bc = spark.sparkContext.broadcast([astuple(e) for e in eps])
    return pubs.mapInArrow(lambda it: _expected_batches(it, bc.value, engine), EXPECTED_DDL)


def check(
    expected: DataFrame, deliv: DataFrame, first_n: int = 10
) -> tuple[dict[str, Any], DataFrame, DataFrame]:
    """Compare expected pairs with the client receives: (counts and first offending ids, pairs, offenders).

    ``pairs`` is every expected or received (pub_id, sub_id) with its flags, ``offenders`` the pairs
    flagged missing, false positive or duplicate, persisted: the caller unpersists it. Every count
    comes from one aggregate over ``pairs``, which is not kept: caching it costs more than the join;
    the pairs are computed again only for a run with offenders. The
    first offenders of each kind are read from ``offenders``, and only for a kind that occurred.

    ``missing``: expected outside transition, never received. ``duplicates``: extra copies
    beyond the first of any received pair. ``false_positives``: received pairs that were not
    expected (and not in transition). ``delivered`` counts every receive.
    """
    from pyspark.sql import functions as F

    j = _pairs(expected, deliv)
    j = j.select(
        "*",
        (F.col("expected") & ~F.col("in_transition") & (F.col("copies") == 0)).alias("missing"),
        (~F.col("expected") & (F.col("copies") > 0)).alias("false_positive"),
        (F.col("copies") > 1).alias("duplicate"),
    )

    def n(c: Any) -> Any:
        return F.sum(c.cast("long"))

    row = j.agg(
        n(F.col("expected") & ~F.col("in_transition")).alias("expected_deliveries"),
        F.sum("copies").alias("delivered"),
        n(F.col("missing")).alias("missing"),
        F.sum(F.when(F.col("copies") > 1, F.col("copies") - 1).otherwise(0)).alias("duplicates"),
        n(F.col("false_positive")).alias("false_positives"),
        n(F.col("in_transition")).alias("in_transition"),
        n(F.col("in_transition") & (F.col("copies") > 0)).alias("in_transition_delivered"),
    ).first()
    counts = {k: int((row[k] if row else 0) or 0) for k in COUNTS}

    offended = counts["missing"] or counts["duplicates"] or counts["false_positives"]
    # with none, an empty relation the optimiser knows is empty: writing it scans nothing
    offenders = (
        j.where(F.col("missing") | F.col("false_positive") | F.col("duplicate")) if offended else j.limit(0)
    )
    offenders.persist()

    def first(flag: str, count: str) -> list[dict[str, Any]]:
        if not counts[count]:
            return []
        rows = offenders.where(F.col(flag)).orderBy("t_ns", "pub_id", "sub_id").limit(first_n).collect()
        return [{"pub_id": r["pub_id"], "sub_id": r["sub_id"], "copies": int(r["copies"])} for r in rows]

    return _result(counts, first), j, offenders


def _result(counts: dict[str, int], first: Callable[[str, str], list[dict[str, Any]]]) -> dict[str, Any]:
    """The correctness result: ``counts`` and the first offenders of each kind (``first(flag, count)``)."""
    return {
        "ok": counts["missing"] == 0 and counts["duplicates"] == 0 and counts["false_positives"] == 0,
        **counts,
        "first_missing": first("missing", "missing"),
        "first_duplicates": first("duplicate", "duplicates"),
        "first_false_positives": first("false_positive", "false_positives"),
    }


def check_rows(
    eps: Iterable[Episode],
    publications: pa.RecordBatch,
    received: pa.Table,
    engine: str = "naive",
    first_n: int = 10,
) -> tuple[dict[str, Any], pa.Table]:
    """The whole check of publications and receives a caller holds: the publications (pub_id, intended,
    sent, attrs as JSON text) matched by :func:`expected_batches`, checked by :func:`check_local`."""
    import pyarrow as pa

    exp = Expectation(eps, engine)
    expected = pa.Table.from_batches(
        list(expected_batches([publications], exp)), schema=arrow_schema(EXPECTED_DDL)
    )
    return check_local(expected, received, first_n)


def check_local(expected: pa.Table, received: pa.Table, first_n: int = 10) -> tuple[dict[str, Any], pa.Table]:
    """:func:`check` of pairs the driver holds: the expected pairs (:data:`EXPECTED_DDL`, from
    :func:`expected_of_columns`) against the collected receives (pub_id, sub_id, recv_ns).

    The same counts and first offenders, and the offenders (:data:`OFFENDERS_DDL`) in their order, from
    one Arrow group-by of both: no Spark job, whose union, shuffle and write cost a cold JVM seconds.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

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
    offenders = offenders.take(pc.sort_indices(offenders, sort_keys=order)).cast(arrow_schema(OFFENDERS_DDL))

    def first(flag: str, count: str) -> list[dict[str, Any]]:
        if not counts[count]:
            return []
        rows = offenders.filter(offenders[flag]).slice(0, first_n).to_pylist()
        return [{"pub_id": r["pub_id"], "sub_id": r["sub_id"], "copies": int(r["copies"])} for r in rows]

    return _result(counts, first), offenders


def _local_pairs(expected: pa.Table, received: pa.Table) -> pa.Table:
    """:func:`_pairs` in Arrow: the expected and the received pairs as one table grouped once by pair."""
    import pyarrow as pa
    import pyarrow.compute as pc

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


def _pairs(expected: DataFrame, deliv: DataFrame) -> DataFrame:
    """Every expected or received (pub_id, sub_id): its time, copies received, and whether it was
    expected and in transition.

    The expected and the received pairs are one union grouped once by pair (one shuffle, no sorts),
    where a group-by of the receives and a join with the expected pairs cost a shuffle and a sort on
    each side.
    A pair several episodes of one sub_id expect is one pair, in transition when any of them is.
    """
    from pyspark.sql import functions as F

    got = deliv.select(
        "pub_id",
        "sub_id",
        F.lit(1).alias("copy"),
        F.lit(0).alias("expectation"),
        "recv_ns",
    )
    exp = expected.select(
        "pub_id",
        "sub_id",
        F.lit(0).alias("copy"),
        F.lit(1).alias("expectation"),
        "intended_ns",
        "in_transition",
    )
    return (
        got.unionByName(exp, allowMissingColumns=True)
        .groupBy("pub_id", "sub_id")
        .agg(
            F.sum("copy").alias("copies"),
            F.min("recv_ns").alias("recv_ns"),
            F.min("intended_ns").alias("intended_ns"),
            F.max("expectation").alias("expectation"),
            F.bool_or("in_transition").alias("in_transition"),
        )
        .select(
            "pub_id",
            "sub_id",
            F.coalesce("intended_ns", "recv_ns").alias("t_ns"),
            "copies",
            (F.col("expectation") == 1).alias("expected"),
            F.coalesce("in_transition", F.lit(False)).alias("in_transition"),
        )
    )
