"""The sustainability criterion and the bisection of `scotbed saturate` (pure)."""

from __future__ import annotations

from scotbed.orchestrator.campaign import Search
from scotbed.orchestrator.saturation import Criterion, bisect_rate, judge, slope

S = 1_000_000_000  # ns


def _pubs(n: int, period_s: float) -> dict[str, int]:
    return {f"p{k}": int(k * period_s * S) for k in range(n)}


def test_slope_is_least_squares() -> None:
    assert slope([(0, 1), (1, 3), (2, 5)]) == 2.0
    assert slope([(0, 4)]) == 0.0 and slope([(1, 1), (1, 5)]) == 0.0


def test_a_run_that_keeps_up_with_flat_queues_is_sustainable() -> None:
    pubs = _pubs(100, 0.1)  # 10 s of publishing
    deliveries = [(p, t + S // 20) for p, t in pubs.items()]  # 50 ms late each
    queues = {"b0->b1": [(k * S // 4, 30 + k % 3) for k in range(40)]}  # busy but flat
    v = judge(pubs, deliveries, queues, Criterion())
    assert v.sustainable and v.keep_up == 1.0 and v.max_growth < 1.0 and v.max_queue == 32
    assert v.window_s == 6.93  # the last 70 % of the 9.9 s publish span


def test_a_growing_queue_or_late_deliveries_make_it_unsustainable() -> None:
    pubs = _pubs(100, 0.1)
    on_time = [(p, t) for p, t in pubs.items()]
    growing = {"b0->b1": [(k * S // 4, 5 * k) for k in range(40)], "b1->b0": [(0, 0)]}  # 20 envelopes/s
    v = judge(pubs, on_time, growing, Criterion())
    assert not v.sustainable and v.worst_queue == "b0->b1" and 19 < v.max_growth < 21
    late = [(p, t + (t // 2)) for p, t in pubs.items()]  # lag grows to 5 s by the end
    v = judge(pubs, late, {}, Criterion())
    assert not v.sustainable and 0 < v.keep_up < 0.95
    small = {"b0->b1": [(k * S // 4, k // 4) for k in range(40)]}  # grows, but stays under the floor
    assert judge(pubs, on_time, small, Criterion()).sustainable
    assert not judge({}, [], {}, Criterion()).sustainable


def test_bisection_brackets_the_threshold_and_a_resumed_search_asks_the_same_rates() -> None:
    asked: list[float] = []

    def probe(rate: float) -> bool:
        asked.append(rate)
        return rate <= 437.0

    lo, hi = bisect_rate(Search(100, 1000, tolerance=0.05, max_probes=20), probe)
    assert lo is not None and hi is not None and lo <= 437 < hi and hi - lo <= 0.05 * lo
    first = list(asked)
    asked.clear()
    assert bisect_rate(Search(100, 1000, tolerance=0.05, max_probes=20), probe) == (lo, hi)
    assert asked == first
    assert bisect_rate(Search(500, 1000), probe) == (None, 500)
    assert bisect_rate(Search(100, 400), probe) == (400, None)
    asked.clear()
    bisect_rate(Search(100, 1000, tolerance=0.0, max_probes=5), probe)
    assert len(asked) == 5


def test_read_run_takes_intended_times_deliveries_and_every_queue(tmp_path) -> None:
    import json

    from scotbed.orchestrator.saturation import read_run

    (tmp_path / "workload").mkdir()
    (tmp_path / "events").mkdir()
    pubs = [{"ts_ns": 5, "intended_ns": 4, "pub_id": "p0"}, {"ts_ns": 9, "intended_ns": 8, "pub_id": "p1"}]
    (tmp_path / "workload" / "publications.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pubs))
    events = [
        {"ts_ns": 1, "node": "b-a-0", "ev": "queue", "link": "", "len": 7, "ce": 0.0},
        {"ts_ns": 2, "node": "b-a-0", "ev": "queue", "link": "b-b-0", "len": 3, "ce": 0.0},
        {"ts_ns": 6, "node": "b-a-0", "ev": "deliver", "pub_id": "p0", "sub_id": "s", "hops": 0},
        {"ts_ns": 7, "node": "b-a-0", "ev": "match", "pub_id": "p0", "us": 1.0, "n": 1},
    ]
    (tmp_path / "events" / "b-a-0.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (tmp_path / "events" / "locust-w0.jsonl").write_text('{"ev": "deliver", "pub_id": "x", "ts_ns": 1}\n')
    intended, deliveries, queues = read_run(tmp_path)
    assert intended == {"p0": 4, "p1": 8}
    assert deliveries == [("p0", 6)]
    assert queues == {"b-a-0 input": [(1, 7)], "b-a-0->b-b-0": [(2, 3)]}  # link "": the input queue
