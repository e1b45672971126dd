"""Spark metrics and the oracle on hand-written and synthesised event logs with known answers.

One local[2] SparkSession for the whole module (Spark start-up is slow on 2 cores).
"""

from __future__ import annotations

import gzip
import json
import math
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from scotbed.analysis import metrics as M
from scotbed.analysis import oracle, series
from scotbed.analysis.events import read_events, read_publications
from scotbed.analysis.pub_arrow import read_publications as read_arrow_publications
from scotbed.analysis.rundir import RunDir
from scotbed.analysis.stats import time_to_stabilise
from scotbed.analysis.synth import SynthSpec, synthesise
from scotbed.analysis.traffic import traffic_per_broker

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def E(ms: float, node: str, ev: str, **kw: Any) -> dict[str, Any]:
    return {"ts_ns": T0 + int(ms * MS), "node": node, "ev": ev, **kw}


def events_of(spark: Any, tmp: Path, rows: list[dict[str, Any]]) -> Any:
    f = tmp / "events.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ok, _ = read_events(spark, [str(f)])
    return ok


def test_reader_handles_gzip_and_counts_malformed_lines(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(json.dumps(E(1, "b1", "table", size=3)) + "\nnot json\n{}\n")
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as f:
        f.write(json.dumps(E(2, "b2", "match", pub_id="p", us=5.5, n=2)) + "\n")
    ok, bad = read_events(spark, [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl.gz")])
    assert sorted((r.node, r.ev) for r in ok.collect()) == [("b1", "table"), ("b2", "match")]
    assert bad.count() == 2


def test_subscription_delay_and_ims(spark: Any, tmp_path: Path) -> None:
    rows = [
        E(0, "c1", "subscribe", sub_id="s1"),
        E(1, "b1", "sub_in", sub_id="s1", link=""),
        E(1.1, "b1", "sub_out", sub_id="s1", link="b2"),
        E(3, "b2", "sub_in", sub_id="s1", link="b1"),
        E(3.1, "b2", "sub_out", sub_id="s1", link="b3"),
        E(6, "b3", "sub_in", sub_id="s1", link="b2"),
        E(10, "b2", "sub_in", sub_id="s2", link=""),  # no client log: issued = first sub_in
        E(12, "b1", "sub_in", sub_id="s2", link="b2"),
        E(11, "b2", "sub_out", sub_id="s2", link="b1"),
        E(11, "b2", "unsub_out", sub_id="s2", link="b1"),
    ]
    ev = events_of(spark, tmp_path, rows)
    df = M.subscription_facts(ev)
    got = {r.sub_id: (r.delay_ms, r.ims, r.sub_in) for r in df.where("in_table").collect()}
    assert got == {"s1": (6.0, 2, 3), "s2": (2.0, 1, 2)}
    d = M.distribution(df.where("in_table"), "delay_ms")
    assert (d["count"], d["mean"], d["max"]) == (2, 4.0, 6.0)
    assert M.local_distribution(df.where("in_table").toPandas()["delay_ms"]) == d  # a small run's path
    assert M.unsubscription_ims(M.node_facts(ev)) == 1
    assert M.times_of(df.toPandas(), "stored_ns") == {"s1": T0 + 6 * MS, "s2": T0 + 12 * MS}


def test_local_distribution_is_sparks_percentile_approx_below_exact_rows(spark: Any) -> None:
    """Odd and even counts, ties, a null: the rank rule gives Spark's quantiles; beyond EXACT_ROWS, the exact
    rank."""
    import random

    rnd = random.Random(5)
    for n in (1, 2, 7, 37, 100, 1001):
        values = [float(rnd.randint(0, n // 3)) / 8 for _ in range(n)] + [None]
        df = spark.createDataFrame([(v,) for v in values], "x DOUBLE")
        want = M.distribution(df, "x")
        got = M.local_distribution(pd.Series(values, dtype="float64"))
        assert got is not None and {k: got[k] for k in want if k != "mean"} == {
            k: want[k] for k in want if k != "mean"
        }, n
        assert got["mean"] == pytest.approx(want["mean"], rel=1e-12)
    n = M.EXACT_ROWS + 10_001  # beyond: the exact rank, which Spark's figure approximates
    df = spark.range(n).selectExpr(f"CAST((id * 7919) % {n} AS DOUBLE) AS x")
    want, got = M.distribution(df, "x"), M.local_distribution(df.toPandas()["x"])
    for q, k in zip(M.SUMMARY_QUANTILES, ("p50", "p90", "p99"), strict=True):
        assert got[k] == max(math.ceil(q * n), 1) - 1
        assert abs(want[k] - got[k]) <= n / M.ACCURACY + 1


def test_notification_delay_percentiles_and_hops(spark: Any, tmp_path: Path) -> None:
    rows = []
    for k in range(1, 101):  # delays 10, 20, ..., 1000 ms from intended; sent 5 ms after intended
        rows.append(
            E(
                k * 2000,
                "pc",
                "publish",
                pub_id=f"p{k}",
                intended_ns=T0 + k * 2000 * MS,
                sent_ns=T0 + (k * 2000 + 5) * MS,
            )
        )
        rows.append(E(k * 2000 + 10 * k, "sc", "receive", pub_id=f"p{k}", sub_id="s1", hops=k % 3))
    ev = events_of(spark, tmp_path, rows)
    deliv = M.deliveries(ev, M.publication_times(ev, None))
    nd, curves = M.delivery_delays(deliv)
    d = nd["delay_ms"]
    assert (d["count"], d["mean"], d["p50"], d["p90"], d["p99"], d["max"]) == (
        100,
        505.0,
        500,
        900,
        990,
        1000,
    )
    assert d["under_1s"] == pytest.approx(0.99)
    s = nd["send_delay_ms"]
    assert (s["p50"], s["max"]) == (495, 995)
    assert (curves["delay_ms"][0], curves["delay_ms"][50], curves["delay_ms"][-1]) == (
        (0.0, 10.0),
        (0.5, 500.0),
        (0.999, 1000.0),
    )
    hops = M.hops_distribution(deliv)
    assert dict(zip(hops["hops"], hops["count"], strict=True)) == {0: 33, 1: 34, 2: 33}
    # the one pass: the same delays and hop counts; a hop count beyond the counted ones gives none
    one_nd, one_curves, one_hops = M.delivery_stats(deliv, 2)
    assert (one_nd, one_curves) == (nd, curves)
    assert one_hops is not None and one_hops.equals(hops.astype("int64"))
    assert M.delivery_stats(deliv, 1)[2] is None
    local = M.local_delivery_stats(deliv.toPandas())  # a small run's path
    assert local is not None and (local[0], local[1]) == (nd, curves) and local[2].equals(one_hops)


def test_local_delivery_stats_are_sparks_below_exact_rows(spark: Any) -> None:
    """Every CDF quantile by rank equals Spark's percentile_approx; odd and even counts, ties, nulls."""
    import random

    rnd = random.Random(11)
    for n in (0, 1, 2, 7, 37, 100, 1001):
        rows = [
            (rnd.randint(0, n // 3 + 1) / 8, rnd.randint(0, 2000) / 4, rnd.randint(0, 4)) for _ in range(n)
        ]
        rows += [(None, None, None)]
        df = spark.createDataFrame(rows, "delay_ms DOUBLE, send_delay_ms DOUBLE, hops BIGINT")
        want = M.delivery_stats(df, 4)
        got = M.local_delivery_stats(df.toPandas())
        assert got is not None and got[1] == want[1] and got[2].equals(want[2]), n
        for c in M.DELAY_COLUMNS:
            assert {k: v for k, v in got[0][c].items() if k != "mean"} == {
                k: v for k, v in want[0][c].items() if k != "mean"
            }, n
            assert got[0][c]["mean"] == pytest.approx(want[0][c]["mean"], rel=1e-12)


def test_the_share_under_1s_is_numpys_on_both_paths(spark: Any) -> None:
    """OctopiS §7's share of deliveries under 1 s: delays on both sides of 1 s, some exactly 1 s (not
    under) and some unknown (left out), against numpy's share of the known delays below 1000 ms."""
    import numpy as np

    rnd = random.Random(5)
    delays = [rnd.choice([1000.0, rnd.uniform(0, 3000)]) for _ in range(400)] + [None] * 7
    df = spark.createDataFrame(
        [(d, d, 1) for d in delays], "delay_ms DOUBLE, send_delay_ms DOUBLE, hops BIGINT"
    )
    known = np.array([d for d in delays if d is not None])
    want = float(np.mean(known < 1000))
    assert 0.1 < want < 0.5  # both sides of 1 s and the tie are present
    spark_share = M.delivery_stats(df, 1)[0]["delay_ms"]["under_1s"]
    local_share = M.local_delivery_stats(df.toPandas())[0]["delay_ms"]["under_1s"]
    assert spark_share == pytest.approx(want, rel=1e-12) and local_share == pytest.approx(want, rel=1e-12)


def test_local_delivery_stats_beyond_exact_rows_are_exact_where_spark_approximates(spark: Any) -> None:
    """Past EXACT_ROWS values Spark's summary merges samples; the collected path keeps the exact rank,
    which Spark's figure approximates within its rank error (1 / ACCURACY of the count)."""
    import random

    n = M.EXACT_ROWS + 10_001
    xs = [k / 8 for k in range(n)]
    random.Random(3).shuffle(xs)
    df = spark.createDataFrame([(x, x, 1) for x in xs], "delay_ms DOUBLE, send_delay_ms DOUBLE, hops BIGINT")
    want = M.delivery_stats(df, 1)[1]["delay_ms"]
    got = M.local_delivery_stats(df.toPandas())[1]["delay_ms"]
    assert [q for q, _ in got] == [q for q, _ in want]
    for (q, exact), (_, approx) in zip(got, want, strict=True):
        assert exact == max(math.ceil(q * n), 1) / 8 - 1 / 8
        assert abs(approx - exact) * 8 <= n / M.ACCURACY + 1


def test_matching_ims_dynamic_load_drops(spark: Any, tmp_path: Path) -> None:
    rows = [
        E(1, "b1", "match", pub_id="p1", us=10.0, n=1),
        E(2, "b1", "match", pub_id="p2", us=30.0, n=3),
        E(2, "b2", "match", pub_id="p1", us=5.0, n=0),
        E(3, "b1", "notif_in", pub_id="p1", link="", hops=0),
        E(3, "b1", "notif_out", pub_id="p1", link="b2", hops=1, dynamic=False),
        E(4, "b2", "notif_in", pub_id="p1", link="b1", hops=1),
        E(4, "b2", "notif_out", pub_id="p1", link="b3", hops=2, dynamic=True),
        E(4, "b2", "notif_out", pub_id="p1", link="", hops=2),  # not an IM: no broker on the link
        E(5, "b2", "drop", link="b3", reason="overflow"),
        E(6, "b2", "drop", link="b3", reason="overflow"),
    ]
    ev = events_of(spark, tmp_path, rows)
    facts = M.node_facts(ev)
    p99, run = M.matching_delays(ev)
    m = M.matching_per_broker(facts, p99).set_index("node")
    assert (
        m.loc["b1", "matches"] == 2 and m.loc["b1", "mean_us"] == 20.0 and m.loc["b1", "mean_matched"] == 2.0
    )
    assert m.loc["b2", "mean_us"] == 5.0 and m.loc["b1", "p99_us"] == 30.0
    # the run's distribution from the same rollup is the one a query of its own gives
    assert run == M.distribution(M.of(ev, "match"), "us") and run["count"] == 3
    none, nothing = M.matching_delays(ev.where("ev != 'match'"))
    assert len(none) == 0 and nothing == M.distribution(M.of(ev, "no-such-event"), "us")
    # the collected matches give the rollup's figures, a broker without a matching time included
    (tmp_path / "untimed").mkdir()
    untimed = ev.union(events_of(spark, tmp_path / "untimed", [E(7, "b3", "match", pub_id="p3", n=1)]))
    for got, want in zip(M.matching_delays(untimed, collect=True), M.matching_delays(untimed), strict=True):
        if isinstance(want, pd.DataFrame):
            by_node = want.sort_values("node").reset_index(drop=True)
            assert_frame_equal(got.sort_values("node").reset_index(drop=True), by_node)
        else:
            assert got == want
    assert M.matching_delays(ev.where("ev != 'match'"), collect=True)[1] == nothing
    nims = M.notification_ims(facts).set_index("node")
    assert nims["ims"].to_dict() == {"b1": 1, "b2": 1}
    assert nims["dynamic"].to_dict() == {"b1": 0, "b2": 1}
    load = M.load_per_broker(facts, ["b1", "b2", "b3"]).set_index("node")
    assert load["messages"].to_dict() == {"b1": 2, "b2": 3, "b3": 0}
    assert load.loc["b1", "match"] == 2
    bal = M.load_balance(load.reset_index())
    assert bal["max_over_mean"] == pytest.approx(3 / (5 / 3))
    assert M.drops(facts) == {"overflow": 2}


def test_stability_curve_with_burst_and_recovery(spark: Any, tmp_path: Path) -> None:
    delays = [5, 5, 5, 100, 200, 150, 10, 5, 5, 4]  # windows of 3: max 5, 200, 10, 4 (partial)
    rows = []
    for k, d in enumerate(delays):
        t = 1000 * (k + 1)
        rows.append(E(t - d, "pc", "publish", pub_id=f"p{k}", intended_ns=T0 + (t - d) * MS))
        rows.append(E(t, "sc", "receive", pub_id=f"p{k}", sub_id="s1", hops=1))
    ev = events_of(spark, tmp_path, rows)
    deliv = M.deliveries(ev, M.publication_times(ev, None)).repartition(3)  # index must survive partitions
    curve = M.stability_curve(deliv, 3)
    # the receives collected and sorted in the driver give the table of Spark's sort and numbering
    pd.testing.assert_frame_equal(
        M.stability_windows(M.in_receive_order(M.collect_receives(deliv)), 3), curve
    )
    assert curve["max_delay_ms"].tolist() == [5, 200, 10, 4]
    assert curve["count"].tolist() == [3, 3, 3, 1]
    assert curve["end_ns"].tolist() == [T0 + t * MS for t in (3000, 6000, 9000, 10000)]
    # burst between the first and the third window: recovered at the end of window 3 (9 s)
    r = time_to_stabilise(curve.to_dict("records"), T0 + 3500 * MS, T0 + 6500 * MS)
    assert (r.pre_burst_ms, r.stabilised_at_ns, r.time_to_stabilise_s) == (5.0, T0 + 9000 * MS, 2.5)


def test_queues_and_tables(spark: Any, tmp_path: Path) -> None:
    rows = [
        E(0, "b1", "queue", link="", len=3, ce=1.0),
        E(1000, "b1", "queue", link="", len=7, ce=1.0),
        E(0, "b1", "queue", link="b2", len=4, ce=0.5),
        E(1000, "b1", "queue", link="b2", len=9, ce=2.5),
        E(0, "b1", "table", size=5),
        E(300, "b1", "table", size=8, link="b2"),
        E(1000, "b1", "table", size=7),
        E(200_000, "b1", "table", size=6),
    ]
    ev = events_of(spark, tmp_path, rows)
    facts = M.node_facts(ev)
    assert M.queue_maxima(facts) == {"max_output_len": 9, "max_input_len": 7}
    q = series.sample_series(ev, series.bins(facts, "queue"), None)[0]
    out = q[q["direction"] == "output"]
    assert out["max_len"].tolist() == [4, 9] and out["t_s"].tolist() == [0.0, 1.0]
    assert q[q["direction"] == "input"]["max_len"].tolist() == [3, 7]
    # one query gives both series, each as a query of its kind alone would: a table sample's link is
    # no part of its group, and each kind has its own bins
    queues, tables = series.sample_series(ev, series.bins(facts, "queue"), series.bins(facts, "table"))
    assert_frame_equal(queues, q)
    width_s = ((200_000 * MS) // 400 + 1) / 1e9  # the table's own bins: 200 s over 400 bins
    assert tables.to_dict("list") == {
        "node": ["b1"] * 3,
        "t_s": [0.0, width_s, 399 * width_s],
        "size": [8, 7, 6],
    }
    assert tables["size"].dtype == "int64" and queues["max_len"].dtype == "int64"
    assert_frame_equal(series.sample_series(ev, None, series.bins(facts, "table"))[1], tables)
    t = M.table_sizes(facts)
    assert (t.loc[0, "max_size"], t.loc[0, "final_size"]) == (8, 6)


@pytest.mark.parametrize("collect", [False, True], ids=["spark", "collected"])
def test_relay_overhead_and_false_positive_traffic(spark: Any, tmp_path: Path, collect: bool) -> None:
    rows = [
        E(1, "b2", "notif_in", pub_id="p1", link="b1", hops=1),
        E(2, "b3", "notif_in", pub_id="p1", link="b2", hops=2),
        E(2, "b4", "notif_in", pub_id="p1", link="b2", hops=2),
        E(1, "b1", "notif_out", pub_id="p1", link="b2", hops=1),
        E(1.5, "b2", "notif_out", pub_id="p1", link="b3", hops=2),
        E(1.5, "b2", "notif_out", pub_id="p1", link="b4", hops=2),
    ]
    ev = events_of(spark, tmp_path, rows)
    interested = spark.createDataFrame([("p1", "b3")], "pub_id STRING, broker STRING")
    relay, fp = traffic_per_broker(ev, interested, ["b1", "b2", "b3", "b4"], collect)
    assert relay.set_index("node")["relay_only"].to_dict() == {"b2": 1, "b3": 0, "b4": 1}
    fp = fp.set_index("node")
    assert fp["ims"].to_dict() == {"b1": 1, "b2": 2}
    assert fp["fp_ims"].to_dict() == {"b1": 0, "b2": 1}


@pytest.mark.parametrize("collect", [False, True], ids=["spark", "collected"])
def test_false_positive_fixpoint_agrees_with_the_python_rule_on_a_skewed_cycle(
    spark: Any, tmp_path: Path, collect: bool
) -> None:
    """Timestamps against the causal order (clock skew) and a cycle need several passes of the fixpoint."""
    from scotbed.analysis.forwarding import false_positive_edges

    edges = [("b2", "b4", 0.0), ("b2", "b3", 1.0), ("b3", "b1", 2.0), ("b1", "b2", 3.0), ("b4", "b5", 4.0)]
    rows = [E(t, s, "notif_out", pub_id="p1", link=d, hops=1) for s, d, t in edges]
    ev = events_of(spark, tmp_path, rows)
    interested = spark.createDataFrame([("p1", "b3")], "pub_id STRING, broker STRING")
    _, fp = traffic_per_broker(ev, interested, ["b1", "b2", "b3", "b4", "b5"], collect)
    want: dict[str, int] = {}
    for s, _ in false_positive_edges([(s, d) for s, d, _ in edges], ["b3"]):
        want[s] = want.get(s, 0) + 1
    got = fp.set_index("node")["fp_ims"].to_dict()
    assert {k: v for k, v in got.items() if v} == want == {"b2": 1, "b4": 1}
    assert fp.set_index("node")["ims"].to_dict() == {"b1": 1, "b2": 2, "b3": 1, "b4": 1}


@pytest.mark.parametrize(
    ("collect", "dense_slots"),
    [(False, None), (True, None), (True, 0)],
    ids=["spark", "collected", "collected-ranked"],
)
def test_traffic_agrees_with_the_python_rule_past_one_mask_word(
    spark: Any, tmp_path: Path, collect: bool, dense_slots: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """130 brokers (three mask words), random copies with cycles and repeats, and copies to brokers
    the list does not name: every count is the plain-Python rule's, on each path (``dense_slots`` 0:
    the collected path's slots ranked, as for a run too large for dense slots)."""
    from scotbed.analysis import traffic
    from scotbed.analysis.forwarding import false_positive_edges

    if dense_slots is not None:
        monkeypatch.setattr(traffic, "DENSE_SLOTS", dense_slots)

    rng = random.Random(7)
    brokers = [f"b{i}" for i in range(130)]
    rows: list[dict[str, Any]] = []
    want_relay: dict[str, list[int]] = {}
    want_fp: dict[str, list[int]] = {}
    interested_rows = []
    for p in range(40):
        pub = f"p{p}"
        targets = [*brokers, "gone-1", "gone-2"]
        edges = [(rng.choice(brokers), rng.choice(targets)) for _ in range(rng.randint(0, 25))]
        interested = rng.sample(brokers, rng.randint(0, 6))
        interested_rows += [(pub, b) for b in interested] * 2  # repeated pairs count once
        for s, d in edges:
            rows.append(E(rng.random(), s, "notif_out", pub_id=pub, link=d))
            if d in brokers:
                rows.append(E(rng.random(), d, "notif_in", pub_id=pub, link=s))
                want_relay.setdefault(d, [0, 0])[0] += 1
                want_relay[d][1] += d not in interested
            want_fp.setdefault(s, [0, 0])[0] += 1
        for s, _ in false_positive_edges(edges, interested):
            want_fp[s][1] += 1
    ev = events_of(spark, tmp_path, rows)
    interested_df = spark.createDataFrame(interested_rows, "pub_id STRING, broker STRING")
    relay, fp = traffic_per_broker(ev, interested_df, brokers, collect)
    assert {r.node: [r.visits, r.relay_only] for r in relay.itertuples()} == want_relay
    assert {r.node: [r.ims, r.fp_ims] for r in fp.itertuples()} == want_fp
    assert sum(v[1] for v in want_fp.values()) > 0 and sum(v[1] for v in want_relay.values()) > 0


def _faulty(run: Path) -> dict[str, tuple[str, str]]:
    """Inject a missing, a duplicate and a false-positive receive into a correct synthesised log."""
    subs = {
        json.loads(x)["sub_id"] for x in (run / "workload" / "subscriptions.jsonl").read_text().splitlines()
    }
    files = sorted((run / "events").glob("worker-*.jsonl"))
    lines = files[0].read_text().splitlines(keepends=True)
    recv = [i for i, x in enumerate(lines) if '"receive"' in x]
    missing, dup = json.loads(lines[recv[3]]), json.loads(lines[recv[7]])
    receivers = {(json.loads(lines[i])["pub_id"], json.loads(lines[i])["sub_id"]) for i in recv}
    pub = missing["pub_id"]
    stranger = next(s for s in sorted(subs) if (pub, s) not in receivers and s != missing["sub_id"])
    fp = dict(missing, sub_id=stranger)
    lines.append(lines[recv[7]])
    lines.append(json.dumps(fp) + "\n")
    del lines[recv[3]]
    files[0].write_text("".join(lines))
    return {
        "missing": (missing["pub_id"], missing["sub_id"]),
        "duplicate": (dup["pub_id"], dup["sub_id"]),
        "false_positive": (fp["pub_id"], fp["sub_id"]),
    }


def _check(spark: Any, run: RunDir) -> dict[str, Any]:
    ev, _ = read_events(spark, run.event_files())
    pubs = read_publications(spark, run)
    assert pubs is not None
    deliv = M.deliveries(ev, M.publication_times(ev, pubs))
    facts = M.subscription_facts(ev).toPandas()
    eps = oracle.episodes(
        run.subscription_ops(), M.times_of(facts, "stored_ns"), M.times_of(facts, "unsub_settled_ns")
    )
    exp = oracle.expected_deliveries(spark, pubs, eps, "naive")
    in_driver = oracle.expected_deliveries(spark, pubs, eps, "naive", in_driver=True)
    assert sorted(in_driver.collect()) == sorted(exp.collect())  # the same pairs in either placement
    # and matched as columns of Arrow's parse of the file (a large run's oracle)
    arrow = read_arrow_publications(run.publications_file)
    assert arrow is not None
    of_columns = oracle.expected_of_columns(arrow, eps, "naive")
    assert of_columns is not None and of_columns.schema.names == exp.columns
    assert sorted(tuple(r.values()) for r in of_columns.to_pylist()) == sorted(
        tuple(r) for r in exp.collect()
    )
    result, pairs, offenders = oracle.check(exp, deliv)
    flagged = pairs.where("missing OR false_positive OR duplicate")
    assert offenders.columns == pairs.columns and sorted(offenders.collect()) == sorted(flagged.collect())
    _same_as_local(of_columns, deliv, result, offenders)
    pairs.unpersist()
    offenders.unpersist()
    return result


def _same_as_local(expected: Any, deliv: Any, result: dict[str, Any], offenders: Any) -> None:
    """The driver's check (a run whose expected pairs and receives are in the driver) gives Spark's
    result and offenders, with the offenders' schema of the contract, in their order."""
    local, local_offenders = oracle.check_local(expected, M.collect_receives(deliv))
    assert local == result
    assert local_offenders.schema == oracle.arrow_schema(oracle.OFFENDERS_DDL)
    assert local_offenders.to_pylist() == sorted(
        (r.asDict() for r in offenders.collect()), key=lambda r: (r["t_ns"], r["pub_id"], r["sub_id"])
    )


def test_oracle_is_clean_on_a_correct_log_and_names_injected_faults(spark: Any, tmp_path: Path) -> None:
    spec = SynthSpec(publications=120, subscribers=12, unsubscribe_fraction=0.25, flooding=True)
    synthesise(tmp_path / "run", spec)
    run = RunDir.open(tmp_path / "run")
    clean = _check(spark, run)
    assert clean["ok"] is True
    assert clean["expected_deliveries"] > 50
    assert (clean["missing"], clean["duplicates"], clean["false_positives"]) == (0, 0, 0)
    assert clean["delivered"] == clean["expected_deliveries"]

    faults = _faulty(tmp_path / "run")
    bad = _check(spark, run)
    assert bad["ok"] is False
    assert (bad["missing"], bad["duplicates"], bad["false_positives"]) == (1, 1, 1)
    as_pair = [(o["pub_id"], o["sub_id"]) for o in bad["first_missing"]]
    assert as_pair == [faults["missing"]]
    assert [(o["pub_id"], o["sub_id"], o["copies"]) for o in bad["first_duplicates"]] == [
        (*faults["duplicate"], 2)
    ]
    assert [(o["pub_id"], o["sub_id"]) for o in bad["first_false_positives"]] == [faults["false_positive"]]


def test_oracle_counts_a_pair_two_episodes_expect_once(spark: Any) -> None:
    """A sub_id subscribed again expects a publication near the switch from both episodes: that is one
    pair (in transition, as one episode says), and its one receive is one delivery."""
    expected = spark.createDataFrame(
        [
            ("p1", "s1", "c1", "b1", T0, False),
            ("p1", "s1", "c1", "b1", T0, True),
            ("p2", "s1", "c1", "b1", T0 + MS, False),
            ("p3", "s2", "c2", "b1", T0 + MS, False),
        ],
        oracle.EXPECTED_DDL,
    )
    deliv = spark.createDataFrame(
        [("p1", "s1", T0 + 5 * MS), ("p2", "s1", T0 + 6 * MS), ("p2", "s1", T0 + 7 * MS), ("p9", "s2", T0)],
        "pub_id STRING, sub_id STRING, recv_ns BIGINT",
    )
    result, pairs, offenders = oracle.check(expected, deliv)
    counts = {k: v for k, v in result.items() if not k.startswith("first_") and k != "ok"}
    assert counts == {
        "expected_deliveries": 2,
        "delivered": 4,
        "missing": 1,
        "duplicates": 1,
        "false_positives": 1,
        "in_transition": 1,
        "in_transition_delivered": 1,
    }
    assert pairs.count() == 4 and offenders.count() == 3
    assert [(o["pub_id"], o["sub_id"], o["copies"]) for o in result["first_duplicates"]] == [("p2", "s1", 2)]
    assert [(o["pub_id"], o["sub_id"]) for o in result["first_missing"]] == [("p3", "s2")]
    assert [(o["pub_id"], o["sub_id"]) for o in result["first_false_positives"]] == [("p9", "s2")]
    local, local_offenders = oracle.check_local(expected.toArrow(), deliv.toArrow())
    assert local == result and local_offenders.num_rows == 3
    offenders.unpersist()


def test_oracle_counts_a_delivery_during_propagation_as_in_transition(spark: Any, tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "events").mkdir(parents=True)
    (run / "workload").mkdir()
    sub = {
        "ts_ns": T0,
        "op": "subscribe",
        "sub_id": "s1",
        "subscriber": "c1",
        "broker": "b2",
        "filter": [{"attr": "x", "op": ">", "value": 0}],
    }
    (run / "workload" / "subscriptions.jsonl").write_text(json.dumps(sub) + "\n")
    pubs = [  # p0 during propagation (not delivered), p1 after it (delivered), p2 after (missed)
        {
            "ts_ns": T0 + k * MS,
            "intended_ns": T0 + k * MS,
            "pub_id": f"p{i}",
            "publisher": "x",
            "broker": "b1",
            "attrs": {"x": 1},
        }
        for i, k in enumerate((2, 20, 30))
    ]
    (run / "workload" / "publications.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pubs))
    rows = [
        E(0, "c1", "subscribe", sub_id="s1"),
        E(1, "b2", "sub_in", sub_id="s1", link=""),
        E(10, "b1", "sub_in", sub_id="s1", link="b2"),  # propagation ends at 10 ms
        E(25, "c1", "receive", pub_id="p1", sub_id="s1", hops=1),
    ]
    (run / "events" / "all.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = _check(spark, RunDir.open(run))
    assert result["in_transition"] == 1
    assert result["expected_deliveries"] == 2
    assert [o["pub_id"] for o in result["first_missing"]] == ["p2"]


@pytest.fixture(scope="module")
def analysed_run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    from scotbed.analysis.api import analyze

    run = tmp_path_factory.mktemp("e2e") / "synth-20260101T000000-0123abcd"
    spec = SynthSpec(publications=300, burst_publications=300, unsubscribe_fraction=0.2, gz=True)
    synthesise(run, spec)
    return run, analyze(run, spark=spark)


@pytest.mark.slow
def test_analyze_writes_the_contract_outputs(analysed_run: tuple[Path, dict[str, Any]]) -> None:
    run, s = analysed_run
    on_disk = json.loads((run / "analysis" / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(s, default=str))
    assert (s["schema_version"], s["run_id"], s["routing"]) == (1, run.name, "rpf")
    from scotbed.analysis import pipeline

    stages = s["environment"]["stages_s"]  # every stage timed once, and they add up to the analysis
    assert list(stages) == [
        pipeline.SESSION_STAGE,
        pipeline.PARSE_STAGE,
        *(n for n, _ in pipeline.SECTIONS),
        pipeline.TABLES_STAGE,
        pipeline.RENDER_STAGE,
    ]
    assert abs(sum(stages.values()) - s["environment"]["analysis_s"]) < 1e-6
    assert s["topology"] == {"brokers": 6, "clusters": 1, "regions": 6, "acols": 5, "icols": 0}
    for key in ("count", "ims_total", "ims_per_subscription"):
        assert key in s["subscriptions"]
    assert set(s["notifications"]["delay_ms"]) >= {"mean", "p50", "p90", "p99", "max"}
    assert set(s["notifications"]["matching_us"]) >= {"mean", "p99"}
    assert (
        s["subscriptions"]["count"] == 20 and s["subscriptions"]["ims_per_subscription"] == 5.0
    )  # path of 6
    c = s["correctness"]
    assert c["ok"] is True and c["expected_deliveries"] == s["notifications"]["delivered"] > 0
    assert s["notifications"]["published"] == 600
    assert s["traffic"]["false_positive"] == 0  # rpf on a tree forwards only towards interest
    rec = s["stability"]["recovery"]
    assert rec["reason"] == "stabilised" and 0 < rec["time_to_stabilise_s"] < 2
    assert s["queues"]["max_output_len"] > 0 and s["queues"]["max_input_len"] > 0
    for name in (
        "stability",
        "queues",
        "load",
        "matching",
        "subscriptions",
        "relay",
        "false_positive_traffic",
    ):
        assert (run / "analysis" / f"{name}.parquet").exists(), name
    assert (run / "analysis" / "deliveries.parquet").is_dir()
    assert {p.name for p in (run / "analysis" / "plots").glob("*.png")} >= {
        "delay_cdf.png",
        "stability.png",
        "queues.png",
        "topology.png",
    }


@pytest.mark.slow
@pytest.mark.chromium
def test_report_renders_in_headless_chromium(
    analysed_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    import shutil
    import subprocess

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium); .ci/run installs it")
    run, _ = analysed_run
    url = (run / "report.html").as_uri()
    flags = [
        browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]  # fmt: skip
    png = tmp_path / "report.png"
    subprocess.run(
        [*flags, f"--screenshot={png}", "--window-size=1280,2000", url], capture_output=True, timeout=120
    )
    assert png.exists() and png.stat().st_size > 30_000  # a blank 1280x2000 page is a few kB
    dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    assert 'id="verdict" class="verdict ok"' in dom and "CORRECT" in dom
    for plot in ("plot-delay_cdf", "plot-stability", "plot-queues", "plot-topology"):
        assert f'id="{plot}"' in dom, plot
    assert dom.count('src="data:image/png;base64,') >= 5
