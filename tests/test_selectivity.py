"""Workload fidelity: a short run's realised selectivity is the one its spec asks for (issue 11).

Realised selectivity = the mean over subscriptions of the fraction of the run's publications each
matches. The publications are the ones the run's publishers issue: publisher p sends the first
``count`` quotes of its source's stream ``seed`` (scotbed.workloads.users.Publisher).
"""

from __future__ import annotations

import json
import subprocess
from itertools import islice
from pathlib import Path
from typing import Any

import pytest
from scotbed_cli import QUICKSTART, scotbed
from workload_plans import plan_for

from scotbed import topology
from scotbed.analysis.fidelity import workload_block
from scotbed.analysis.rundir import RunDir
from scotbed.filters import Filter
from scotbed.workloads.plan import Plan
from scotbed.workloads.quotes import GbmMarket, sample
from scotbed.workloads.subscriptions import (
    GUARD_MARGIN,
    MAX_MISSES,
    Calibration,
    generate_covering,
    mean_selectivity,
    selectivity,
)

SCOT = topology.tree(topology.path(3))
ADDR = {b.id: f"{b.id}:1" for b in SCOT.brokers}


def published(plan: Plan) -> list[dict[str, Any]]:
    sources = plan.sources()
    return [q for p in plan.publishers for q in islice(sources[p.name].stream(p.seed), p.count)]


def realised(workload: dict[str, Any], seed: int) -> float:
    plan = plan_for(workload, SCOT, ADDR, seed=seed)
    filters = [f for s in plan.subscribers for _, f in s.subscriptions]
    return mean_selectivity(filters, published(plan))


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_three_publishers_of_40_realise_the_target_within_20_percent(seed: int) -> None:
    workload = {"selectivity": 0.05, "publishers": 3, "notifications_per_publisher": 40, "subscribers": 60}
    assert 0.04 <= realised(workload, seed) <= 0.06


def test_covering_children_are_calibrated_on_the_run_stream_length_too() -> None:
    workload = {
        "selectivity": 0.05,
        "publishers": 3,
        "notifications_per_publisher": 40,
        "subscribers": 60,
        "covering": {"degree": 2},
    }
    plan = plan_for(workload, SCOT, ADDR, seed=1)
    quotes = published(plan)
    filters = [f for s in plan.subscribers for _, f in s.subscriptions]
    kids = [f for f in filters if any(g != f and g.covers(f) for g in filters)]  # roots are wider
    assert len(kids) >= 30
    assert 0.04 <= mean_selectivity(kids, quotes) <= 0.06


def test_mean_selectivity_is_the_mean_of_each_filter_selectivity() -> None:
    quotes = [{"x": v, "s": "AB" if v % 2 else "CD"} for v in range(20)]
    filters = [Filter.parse("x < 5"), Filter.parse('s prefix "A"'), Filter.parse("x between [100, 200]")]
    expected = sum(selectivity(f, quotes) for f in filters) / len(filters)
    assert mean_selectivity(filters, quotes) == pytest.approx(expected) == pytest.approx((5 + 10 + 0) / 60)
    assert mean_selectivity([], quotes) == 0.0


def test_the_summary_block_reads_the_run_workload_files(tmp_path: Path) -> None:
    (tmp_path / "workload").mkdir()
    (tmp_path / "spec.resolved.yaml").write_text("name: x\nworkload: {selectivity: 0.25}\n")
    subs = [
        {"ts_ns": 1, "op": "subscribe", "sub_id": "a", "filter": Filter.parse("x < 2").to_json()},
        {"ts_ns": 2, "op": "subscribe", "sub_id": "b", "filter": Filter.parse("x >= 3").to_json()},
        {"ts_ns": 3, "op": "unsubscribe", "sub_id": "a", "filter": Filter.parse("x < 2").to_json()},
    ]
    pubs = [{"ts_ns": 9, "pub_id": f"p{v}", "attrs": {"x": v}} for v in range(4)]
    (tmp_path / "workload" / "subscriptions.jsonl").write_text("".join(json.dumps(d) + "\n" for d in subs))
    (tmp_path / "workload" / "publications.jsonl").write_text("".join(json.dumps(d) + "\n" for d in pubs))
    block = workload_block(RunDir(tmp_path))
    # a matches x=0,1 (2/4), b matches x=3 (1/4): mean 3/8, whenever they were issued
    assert block.to_json() == {
        "subscriptions": 2,
        "publications": 4,
        "selectivity": {"target": 0.25, "realised": 0.375},
    }


def test_a_stock_ticker_run_counts_over_arrow_columns_as_over_its_decoded_quotes(tmp_path: Path) -> None:
    """The generated workload's attrs are plain numbers and strings, so the realised selectivity is counted
    over Arrow's columns of the file; it equals the count over the decoded quotes, and a file Arrow's
    parse refuses (an explicit null) is counted over its decoded lines."""
    from scotbed.analysis.fidelity import realised_selectivity
    from scotbed.analysis.pub_arrow import read_publications

    workload = {"selectivity": 0.05, "publishers": 3, "notifications_per_publisher": 40, "subscribers": 60}
    plan = plan_for(workload, SCOT, ADDR, seed=2)
    filters = [f for s in plan.subscribers for _, f in s.subscriptions]
    quotes = published(plan)
    path = tmp_path / "publications.jsonl"
    path.write_text("".join(json.dumps({"pub_id": f"p{i}", "attrs": q}) + "\n" for i, q in enumerate(quotes)))
    pubs = read_publications(path)
    assert pubs is not None
    want = (len(quotes), mean_selectivity(filters, quotes))
    assert (
        realised_selectivity(filters, path, pubs.attrs) == realised_selectivity(filters, path, None) == want
    )
    path.write_text(path.read_text() + json.dumps({"pub_id": "px", "attrs": {"venue": None}}) + "\n")
    assert read_publications(path) is None
    with_null = [*quotes, {"venue": None}]
    assert realised_selectivity(filters, path, None) == (len(with_null), mean_selectivity(filters, with_null))


# --- a selectivity the generator cannot reach ends `validate` and `run` at once (issue 39) ------


def _refused(proc: subprocess.CompletedProcess[str], *parts: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    for part in parts:
        assert part in proc.stderr, proc.stderr


def test_a_selectivity_above_the_broadest_guard_is_refused_with_the_reachable_bound(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    for command, *flags in (("validate",), ("run", "--out", str(out), "--quiet")):
        high = ["--set", "workload.selectivity=0.5"]
        proc = scotbed(tmp_path, command, str(QUICKSTART), *high, *flags, timeout=120)
        _refused(
            proc,
            "workload.selectivity: 0.5 cannot be reached by this workload: ",
            f"a guard must match {GUARD_MARGIN:g} × the selectivity; at most 0.",
        )
    assert not [p for p in out.rglob("*") if p.is_file() and p.parent.name == "events"]  # no broker ran


def test_a_selectivity_too_fine_for_the_quotes_ends_the_search(tmp_path: Path) -> None:
    coarse = ["workload.symbols=5", "workload.notifications_per_publisher=1", "workload.selectivity=0.02"]
    sets = [a for s in coarse for a in ("--set", s)]
    proc = scotbed(tmp_path, "validate", str(QUICKSTART), *sets, timeout=120)
    _refused(proc, f"workload.selectivity: 0.02 could not be met: {MAX_MISSES} candidate filters in a row")


def test_covering_roots_the_quotes_cannot_tell_apart_end_the_search() -> None:
    market = GbmMarket(symbols=20, seed=1)
    few = Calibration.of(sample(market, 30, seed=1))  # 30 quotes: far fewer change windows than roots
    with pytest.raises(
        ValueError, match=rf"^workload.covering: 100 root subscriptions need .* {MAX_MISSES} draws"
    ):
        generate_covering(market, 200, 1, 0.01, seed=1, calibration=few)
