"""Pure parts of the analysis: statistics, burst recovery, forwarding usefulness, oracle expectations."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats
from test_matching import events, filters

from scotbed.analysis.forwarding import false_positive_edges, useful_brokers
from scotbed.analysis.jsontext import decode_lines
from scotbed.analysis.oracle import (
    FOREVER,
    Episode,
    Expectation,
    decode_attrs,
    episodes,
    expected_batches,
    expected_of_columns,
    pick_engine,
)
from scotbed.analysis.pub_arrow import parse_publications
from scotbed.analysis.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    bootstrap_mean_ci,
    flatten,
    mean_ci,
    time_to_stabilise,
)
from scotbed.filters import Filter

MS = 1_000_000


@pytest.mark.parametrize("values", [[1.0, 2.0, 3.0], [10.0, 12.0], [3.5, 9.0, 1.25, 7.0, 7.5, 2.0]])
def test_mean_ci_is_scipys_t_interval(values: list[float]) -> None:
    ci = mean_ci(values)
    sem = scipy_stats.sem(values)
    low, high = scipy_stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=sem)
    assert (ci.n, ci.mean, ci.method) == (len(values), pytest.approx(np.mean(values)), "t")
    assert (ci.low, ci.high) == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))


def test_mean_ci_of_one_value_has_no_interval_and_equal_values_a_zero_width_one() -> None:
    one = mean_ci([5.0])
    assert (one.n, one.mean, one.has_interval, one.method) == (1, 5.0, False, "none")
    assert math.isnan(one.low) and math.isnan(one.high)
    same = mean_ci([4.0, 4.0, 4.0])
    assert (same.low, same.high, same.has_interval) == (4.0, 4.0, True)
    assert mean_ci([]).n == 0 and mean_ci([None, float("nan")]).n == 0


def test_bootstrap_needs_five_values_and_then_is_scipys() -> None:
    assert bootstrap_mean_ci([1.0, 2.0, 4.0, 8.0]).method == "t"
    xs = [1.0, 2.0, 4.0, 8.0, 16.0]
    ci = bootstrap_mean_ci(xs)
    ref = scipy_stats.bootstrap(
        (np.asarray(xs),),
        np.mean,
        n_resamples=BOOTSTRAP_RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(BOOTSTRAP_SEED),
    ).confidence_interval
    assert (ci.method, ci.low, ci.high) == ("bootstrap", ref.low, ref.high)


def _w(i: int, max_ms: float) -> dict[str, float]:
    return {"start_ns": i * 10 * MS, "end_ns": i * 10 * MS + 9 * MS, "max_delay_ms": max_ms}


def test_time_to_stabilise_after_burst() -> None:
    # windows every 10 ms; burst from 20 ms to 50 ms; pre-burst level 8 -> bound 8*1.5+10 = 22
    windows = [_w(0, 6), _w(1, 8), _w(2, 300), _w(3, 500), _w(4, 400), _w(5, 90), _w(6, 20), _w(7, 9)]
    r = time_to_stabilise(windows, burst_start_ns=20 * MS, burst_end_ns=50 * MS)
    assert r.pre_burst_ms == 8
    assert r.bound_ms == pytest.approx(22.0)
    assert r.stabilised_at_ns == 69 * MS  # window 6 (60-69 ms) is the first within the bound
    assert r.time_to_stabilise_s == pytest.approx(0.019)


def test_time_to_stabilise_never_or_unknown() -> None:
    windows = [_w(0, 6), _w(1, 300), _w(2, 200)]
    assert time_to_stabilise(windows, 10 * MS, 15 * MS).stabilised_at_ns is None
    assert time_to_stabilise(windows, 0, 15 * MS).reason == "no complete window before the burst"


def test_flatten() -> None:
    assert flatten({"a": {"b": 1, "c": {"d": [1]}}, "e": 2}) == {"a.b": 1, "a.c.d": [1], "e": 2}


def test_false_positive_edges_on_a_tree_and_a_cycle() -> None:
    edges = [("b1", "b2"), ("b2", "b3"), ("b2", "b4"), ("b1", "b5")]
    assert false_positive_edges(edges, {"b3"}) == [("b2", "b4"), ("b1", "b5")]
    assert useful_brokers(edges, {"b3"}) == {"b1", "b2", "b3"}
    cyclic = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
    assert false_positive_edges(cyclic, {"d"}) == []
    assert false_positive_edges(cyclic, set()) == cyclic


def _ep(
    sid: str, flt: list, start: int, settled: int, end: int = FOREVER, unsettled: int = FOREVER
) -> Episode:
    return Episode(sid, "c-" + sid, "b1", json.dumps(flt), start, settled, end, unsettled)


def test_expectation_active_transition_and_ended() -> None:
    price = [{"attr": "price", "op": "<", "value": 10}]
    eps = [_ep("s1", price, 100, 110, 200, 220), _ep("s2", [], 0, 5)]
    exp = Expectation(eps, "naive")

    def got(intended: int, sent: int, attrs: dict) -> set[tuple[str, bool]]:
        return {(e.sub_id, tr) for e, tr in exp.expected(intended, sent, attrs)}

    assert got(150, 151, {"price": 5}) == {("s1", False), ("s2", False)}  # both active and settled
    assert got(150, 151, {"price": 50}) == {("s2", False)}  # s1 does not match
    assert got(105, 105, {"price": 5}) == {("s1", True), ("s2", False)}  # s1 still propagating
    assert got(90, 101, {"price": 5}) == {("s1", True), ("s2", False)}  # issued across the subscribe
    assert got(210, 210, {"price": 5}) == {("s1", True), ("s2", False)}  # unsubscription propagating
    assert got(230, 230, {"price": 5}) == {("s2", False)}  # s1 gone
    assert got(50, 50, {"price": 5}) == {("s2", False)}  # s1 not yet subscribed


@st.composite
def windows(draw: st.DrawFn) -> tuple[int, int, int, int]:
    """An episode's (start, settled, end, unsettled) on a 0..100 clock: open, or ended within it."""
    start = draw(st.integers(0, 60))
    settled = start + draw(st.integers(0, 20))
    if draw(st.booleans()):
        return start, settled, FOREVER, FOREVER
    end = draw(st.integers(start, 100))
    return start, settled, end, end + draw(st.integers(0, 20))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    flts=st.lists(filters, min_size=1, max_size=5),
    spans=st.lists(windows(), min_size=6, max_size=6),
    pubs=st.lists(st.tuples(events, st.integers(0, 100), st.integers(0, 100)), min_size=1, max_size=10),
)
def test_a_batch_of_publications_gives_the_pairs_of_each_alone(
    flts: list[Filter], spans: list[tuple[int, int, int, int]], pubs: list[tuple[dict, int, int]]
) -> None:
    """expected_batches (columns where numpy compares exactly, else the engine) = expected() one at a time."""
    flts = [*flts, flts[0]]  # two episodes of one filter: one mask for both
    eps = [_ep(f"s{i}", f.to_json(), *span) for i, (f, span) in enumerate(zip(flts, spans, strict=False))]
    exp = Expectation(eps, "counting")
    want = sorted(
        (f"p{k}", e.sub_id, e.subscriber, e.broker, t, tr)
        for k, (attrs, t, s) in enumerate(pubs)
        for e, tr in exp.expected(t, s, attrs)
    )
    batch = pa.RecordBatch.from_pydict(
        {
            "pub_id": [f"p{k}" for k in range(len(pubs))],
            "intended": pa.array([t for _, t, _ in pubs], pa.int64()),
            "sent": pa.array([s for _, _, s in pubs], pa.int64()),
            "attrs": [json.dumps(a) if a else "" for a, _, _ in pubs],
        }
    )
    got = [b.to_pylist() for b in expected_batches([batch], exp)]
    assert sorted(tuple(r.values()) for rows in got for r in rows) == want
    # the same publications as the workload's lines, matched as columns of Arrow's parse where it takes them
    lines = [
        json.dumps({"ts_ns": s, "intended_ns": t, "pub_id": f"p{k}", "attrs": a}) + "\n"
        for k, (a, t, s) in enumerate(pubs)
    ]
    arrow = parse_publications("".join(lines).encode())
    table = None if arrow is None else expected_of_columns(arrow, eps, "naive")
    if table is not None:
        assert sorted(tuple(r.values()) for r in table.to_pylist()) == want


def test_attrs_are_decoded_as_json_loads_decodes_them() -> None:
    texts = ['{"a": 1}', None, "", ' {"b": 2.5} ', '{"c": [1, {"d": null}], "e": "x\\"y"}']
    assert decode_attrs(texts) == [{"a": 1}, {}, {}, {"b": 2.5}, {"c": [1, {"d": None}], "e": 'x"y'}]
    for bad in ('{"x": 1', '{"x": 1}, {}', '{"a": 1}x'):
        with pytest.raises(json.JSONDecodeError):
            decode_attrs([bad])
    lines = ['{"a": 1}\n', "\n", "  \n", '{"b": 2} \r\n', '{"c": "\u2028"}']  # as a text file yields them
    assert list(decode_lines(lines)) == [{"a": 1}, {"b": 2}, {"c": "\u2028"}]


def test_episodes_from_workload_with_settle_bound() -> None:
    ops = [
        {"ts_ns": 100, "op": "subscribe", "sub_id": "s1", "subscriber": "c1", "broker": "b1", "filter": []},
        {"ts_ns": 300, "op": "unsubscribe", "sub_id": "s1", "subscriber": "c1", "broker": "b1"},
        {"ts_ns": 150, "op": "subscribe", "sub_id": "s2", "subscriber": "c2", "broker": "b2", "filter": []},
    ]
    eps = {
        e.sub_id: e for e in episodes(ops, {"s1": 130, "s2": 151}, {"s1": 320}, {"s1": 102}, {}, settle_ns=20)
    }
    assert (eps["s1"].start_ns, eps["s1"].sub_settled_ns) == (
        102,
        130,
    )  # client time; the propagation end wins
    assert (eps["s1"].end_ns, eps["s1"].unsub_settled_ns) == (300, 320)
    assert (eps["s2"].start_ns, eps["s2"].sub_settled_ns, eps["s2"].end_ns) == (
        150,
        170,
        FOREVER,
    )  # settle wins


def test_pick_engine_falls_back_to_an_installed_engine() -> None:
    assert pick_engine("naive") == "naive"
    assert pick_engine("no-such-engine") in ("counting", "naive")


def test_delay_axis_follows_the_data() -> None:
    from scotbed.analysis.plots import delay_axis_is_log

    assert not delay_axis_is_log([10.0, 18.0, 25.0])  # the quickstart's range: linear over its own span
    assert delay_axis_is_log([0.4, 12.0, 900.0])  # three decades: log
    assert not delay_axis_is_log([-0.5, 3.0, 900.0])  # a negative delay (clock skew) cannot go on a log axis
    assert not delay_axis_is_log([])


def test_a_plot_is_drawn_once_and_looks_as_tight_layout_draws_it(tmp_path, monkeypatch) -> None:
    """``plots.save`` draws each figure once (``savefig`` would lay out again an engine left on it)
    and its PNG has the pixels of a plain ``tight_layout`` and ``savefig``."""
    import numpy as np
    from matplotlib.figure import Figure
    from PIL import Image

    from scotbed.analysis import plots

    def figure() -> Figure:
        fig, ax = plots.plt.subplots(figsize=(4, 3))
        ax.plot([0.0, 1.0, 2.0], [3.0, 1.0, 2.0], label="a long label for the legend")
        ax.set_xlabel("time since the first receive (s)")
        ax.legend()
        return fig

    plain = figure()
    plain.tight_layout()
    plain.savefig(tmp_path / "plain.png", dpi=plots.DPI)
    draws: list[Figure] = []
    draw = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda fig, renderer: draws.append(fig) or draw(fig, renderer))
    plots.save(figure(), tmp_path / "saved.png")
    assert len(draws) == 1
    got, want = (np.asarray(Image.open(tmp_path / f"{n}.png")) for n in ("saved", "plain"))
    assert got.shape == want.shape and (got == want).all()


def test_verdict_reads_the_typed_counts() -> None:
    import json
    from pathlib import Path

    from scotbed.analysis.summary import verdict_of_json

    doc = json.loads((Path(__file__).parent / "fixtures" / "analysis_summary_golden.json").read_text())
    assert verdict_of_json(doc) == (
        False,
        "INCORRECT: 2188 delivered of 2187 expected (+0 in transition), "
        "1 missing, 1 duplicates, 1 false positives",
    )
    doc["notifications"].update(missing=0, duplicates=0, false_positives=0, delivered=2187)
    assert verdict_of_json(doc)[0] is False  # the oracle's own verdict still says incorrect
    doc["correctness"]["ok"] = True
    assert verdict_of_json(doc)[0] is True
    doc["notifications"]["expected_deliveries"] = 0
    assert verdict_of_json(doc)[0] is False  # nothing expected is no evidence
    assert verdict_of_json({})[0] is False


def test_stability_windows_number_receives_in_spark_order() -> None:
    """Receive time, then pub_id, then sub_id (a null first, as Spark sorts); windows of 2, last partial."""
    import pandas as pd
    import pyarrow as pa

    from scotbed.analysis.metrics import STABILITY_COLUMNS, in_receive_order, stability_windows

    rows = pd.DataFrame(
        [(30, 9.0, "p2", "s1"), (10, 1.0, "p1", "s2"), (10, 4.0, "p1", None), (20, 2.0, "p0", "s1"),
         (10, 3.0, "p1", "s1")],
        columns=["recv_ns", "delay_ms", "pub_id", "sub_id"],
    )  # fmt: skip
    curve = stability_windows(in_receive_order(pa.Table.from_pandas(rows)), 2)
    assert list(curve.columns) == STABILITY_COLUMNS
    # order: (10,p1,None,4) (10,p1,s1,3) | (10,p1,s2,1) (20,p0,s1,2) | (30,p2,s1,9)
    assert curve["window"].tolist() == [0, 1, 2] and curve["count"].tolist() == [2, 2, 1]
    assert curve["max_delay_ms"].tolist() == [4.0, 2.0, 9.0]
    assert curve["mean_delay_ms"].tolist() == [3.5, 1.5, 9.0]
    assert (curve["start_ns"].tolist(), curve["end_ns"].tolist()) == ([10, 10, 30], [10, 20, 30])
    assert stability_windows(rows.iloc[:0], 2).columns.tolist() == STABILITY_COLUMNS


def test_rank_quantiles_take_the_value_of_rank_ceil_q_n() -> None:
    from scotbed.analysis.stats import rank_quantiles

    xs = [5.0, 1.0, 4.0, 2.0, 3.0]  # sorted 1..5: ranks ceil(.5·5)=3, ceil(.9·5)=5, ceil(.01·5)=1
    assert rank_quantiles(xs, [0.5, 0.9, 0.01, 0.0]) == [3.0, 5.0, 1.0, 1.0]
    assert rank_quantiles([1.0, 2.0], [0.5]) == [1.0]  # the lower median
    assert rank_quantiles([], [0.5]) == [None]
