"""The drain after the last publication, end to end: real brokers, real Locust, real Spark.

Slow links build a backlog that outlasts ``workload.drain_s``; the subscribers stay connected until
every broker is quiescent, so the run ends correct. With a ``timeouts.drain_s`` too short for the
backlog, the deliveries still queued are counted as undelivered at stop (exit 4), not as missing.
Plus the drain section's pure logic.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scotbed import contract
from scotbed.analysis.summary import UNDRAINED, drain_of
from scotbed.orchestrator.locust_driver import SubscriberCatchUp
from scotbed.orchestrator.run import RunOptions, run_spec, undrained_or_incorrect
from scotbed.orchestrator.state import load_all

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "experiments" / "quickstart.yaml"

# 80 notifications in about 1 s from two publishers into links that carry 5 messages/s: the
# backlog needs seconds to drain, far more than workload.drain_s
SLOW = [
    "workload.subscribers=12",
    "workload.publishers=2",
    "workload.notifications_per_publisher=40",
    "workload.rate_per_minute=2400",
    "workload.symbols=20",
    "workload.selectivity=0.1",
    "workload.placement=per-cluster",
    "workload.drain_s=0.2",
    "links.capacity_msgs_per_s=5",
    "timeouts.ready_s=90",
    "timeouts.quiescent_s=60",
    "routing=snr",
]


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))


@pytest.mark.slow
@pytest.mark.spark
def test_a_backlog_longer_than_the_workload_drain_ends_correct(tmp_path: Path, spark: Any) -> None:
    result = run_spec(
        QUICKSTART, [*SLOW, "timeouts.drain_s=120"], RunOptions(out=tmp_path / "runs", quiet=True)
    )
    record = json.loads((result.run_dir / contract.DRAIN).read_text())
    n, drain = result.summary["notifications"], result.summary["drain"]
    assert result.ok, result.verdict
    assert record["quiescent"] and record["backlog_at_stop"] == 0
    assert record["received"] == record["delivered"] == n["delivered"]  # the subscribers read them all
    assert record["peak_backlog"] > 0 and record["elapsed_s"] > 0.2  # it outlasted workload.drain_s
    assert n["published"] == 80
    assert n["delivered"] == n["expected_deliveries"] > 0
    assert n["missing"] == n["undelivered_at_stop"] == n["duplicates"] == n["false_positives"] == 0
    assert drain["quiescent"] and drain["delay_excludes"] == 0 and n["delay_ms"]["excludes"] == 0
    assert (result.run_dir / contract.LOCUST_STOP).exists()
    assert load_all() == []


@pytest.mark.slow
@pytest.mark.spark
def test_a_deadline_shorter_than_the_backlog_counts_undelivered_at_stop(tmp_path: Path, spark: Any) -> None:
    result = run_spec(
        QUICKSTART, [*SLOW, "timeouts.drain_s=0.5"], RunOptions(out=tmp_path / "runs", quiet=True)
    )
    n, drain = result.summary["notifications"], result.summary["drain"]
    assert not drain["quiescent"] and drain["backlog_at_stop"] > 0
    assert n["undelivered_at_stop"] > 0 and n["missing"] == 0
    assert n["delivered"] + n["undelivered_at_stop"] == n["expected_deliveries"]
    assert drain["delay_excludes"] == n["delay_ms"]["excludes"] == n["undelivered_at_stop"]
    assert not result.ok and result.verdict.startswith(UNDRAINED), result.verdict
    assert undrained_or_incorrect(result.verdict) == 4
    assert load_all() == []


RECORD = {"deadline_s": 5.0, "quiescent": False, "elapsed_s": 5.1, "backlog_at_stop": 7, "peak_backlog": 90}


def test_the_subscribers_catch_up_when_their_count_meets_the_brokers_or_stalls() -> None:
    wait = SubscriberCatchUp(stall_s=2.0)
    assert not wait.done(delivered=10, received=4, now=0.0)
    assert not wait.done(delivered=10, received=7, now=1.0)  # still reading
    assert not wait.done(delivered=10, received=7, now=2.9)
    assert wait.done(delivered=10, received=7, now=3.0)  # no progress for 2 s: a cancelled stream
    assert SubscriberCatchUp().done(delivered=10, received=10, now=0.0)


def test_a_cut_drain_moves_the_unfound_deliveries_to_undelivered_at_stop() -> None:
    d = drain_of(RECORD, 12)
    assert (d.recorded, d.quiescent, d.undelivered_at_stop, d.delay_excludes) == (True, False, 12, 12)


def test_a_quiescent_drain_leaves_the_unfound_deliveries_missing() -> None:
    d = drain_of({**RECORD, "quiescent": True, "backlog_at_stop": 0}, 3)
    assert (d.undelivered_at_stop, d.delay_excludes) == (0, 3)


def test_without_a_drain_record_nothing_is_undelivered_at_stop() -> None:
    d = drain_of(None, 4)
    assert (d.recorded, d.undelivered_at_stop, d.delay_excludes) == (False, 0, 4)


def test_an_incorrect_run_exits_1_and_an_undrained_one_4() -> None:
    assert undrained_or_incorrect("INCORRECT: 3 missing") == 1
    assert undrained_or_incorrect(UNDRAINED + "5 undelivered at stop") == 4


def _doc(missing: int, undelivered: int, oracle_ok: bool) -> dict[str, Any]:
    counts = {"published": 10, "expected_deliveries": 20, "delivered": 20 - missing - undelivered}
    zeros = {k: 0 for k in ("duplicates", "false_positives", "in_transition", "ims_total", "dynamic_copies")}
    dists = {k: {} for k in ("delay_ms", "send_delay_ms", "matching_us", "hops")}
    notes = {**counts, **zeros, **dists, "missing": missing, "undelivered_at_stop": undelivered}
    return {"notifications": notes, "correctness": {"ok": oracle_ok, "engine": "naive", "settle_ms": 0}}


def test_the_verdict_tells_undrained_from_incorrect_and_correct() -> None:
    from scotbed.analysis.summary import verdict_of_json

    assert verdict_of_json(_doc(0, 0, True))[0]
    ok, text = verdict_of_json(_doc(0, 5, False))
    assert not ok and text.startswith(UNDRAINED) and "5 undelivered at stop" in text
    ok, text = verdict_of_json(_doc(2, 5, False))
    assert not ok and text.startswith("INCORRECT: ") and "2 missing" in text
    doc = _doc(0, 0, True)
    del doc["notifications"]["undelivered_at_stop"]  # a summary from before the drain section
    assert verdict_of_json(doc)[0]


def test_the_report_says_undrained_only_when_deliveries_were_undelivered_at_stop(tmp_path: Path) -> None:
    from scotbed.analysis.report import render_run

    summary = json.loads((REPO / "tests" / "fixtures" / "analysis_summary_golden.json").read_text())
    assert "UNDRAINED" not in render_run(tmp_path / "a.html", summary, "", {}, {}).read_text()
    summary["drain"] = {**summary["drain"], "undelivered_at_stop": 3, "backlog_at_stop": 2, "deadline_s": 1.0}
    html = render_run(tmp_path / "b.html", summary, "", {}, {}).read_text()
    assert "UNDRAINED: 3 of the missing deliveries were still" in html


def test_losses_inside_declared_fault_windows_do_not_fail_the_verdict() -> None:
    """As faultwindows.attribute leaves a summary: the oracle ok, none missing outside, 7 inside."""
    from scotbed.analysis.summary import verdict_of_json

    doc = _doc(0, 0, True)
    doc["notifications"]["delivered"] = 13
    ok, text = verdict_of_json(doc)
    assert not ok  # 7 short of the 20 expected, and nothing excuses them
    doc["notifications"]["missing_in_fault_windows"] = 7
    ok, text = verdict_of_json(doc)
    assert ok and text.startswith("correct: ") and "7 lost inside fault windows" in text
    doc["notifications"]["missing_in_fault_windows"] = 6
    assert not verdict_of_json(doc)[0]
