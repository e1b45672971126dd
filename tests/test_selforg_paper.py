"""The paper's evaluation in the simulator (scotbed.selforg.paper) on a small setup: what each series
counts, that every heuristic sees the same workload, and that a seed repeats exactly."""

from __future__ import annotations

import math
from typing import Any

import pytest

from scotbed.selforg.paper import (
    RECONFIGURATION,
    Evaluation,
    Run,
    costs,
    eta_summaries,
    runs,
    setup,
    summaries,
    window_buckets,
)
from scotbed.selforg.sim import NOTIFY, OVERHEAD

#: 12 brokers, 4 types, 1,500 ticks: links redrawn at 500, brokers at 1,000, buckets of 100 ticks
SMALL: dict[str, Any] = {
    "alpha": 0.5,
    "duration": 1500.0,
    "rate": 0.05,
    "unsubscribe_rate": 0.0001,
    "brokers": 12,
    "types": 4,
    "bucket": 100.0,
}


def small_runs(seed: int, *heuristics: str | None) -> dict[str, Run]:
    return runs(seed, heuristics, Evaluation(**SMALL))


@pytest.fixture(scope="module")
def small() -> dict[str, dict[str, Any]]:
    return summaries(3, **SMALL)


def test_the_static_tree_sends_no_message_of_its_own(small: dict[str, dict[str, Any]]) -> None:
    static = small["static"]["selforg"]
    assert static["overhead_per_notification"] == 0.0 and static["swaps"] == 0
    assert static["cost_with_overhead_per_notification"] == static["cost_per_notification"] > 0
    assert small["static-reconfiguration"] == {"selforg": {"cost_per_notification": 0.0}}


def test_a_heuristics_count_adds_its_broadcasts_and_swaps(small: dict[str, dict[str, Any]]) -> None:
    for name in ("lmst", "lmit", "ci"):
        s = small[name]["selforg"]
        assert s["broadcast_per_notification"] > 0
        own = s["broadcast_per_notification"] + s["reconfiguration_per_notification"]
        assert math.isclose(s["overhead_per_notification"], own)
        counted = s["cost_per_notification"] + s["overhead_per_notification"]
        assert math.isclose(s["cost_with_overhead_per_notification"], counted)
        reconfiguration = small[f"{name}-reconfiguration"]["selforg"]
        assert reconfiguration == {"cost_per_notification": s["reconfiguration_per_notification"]}
    assert {*RECONFIGURATION, "broadcast"} == set(OVERHEAD)


def test_every_heuristic_runs_on_the_same_tree_costs_and_workload() -> None:
    done = small_runs(3, None, "lmst", "ci")
    first = done["static"].outcome
    for run in done.values():
        assert run.outcome.trees[0].adjacency == first.trees[0].adjacency
        assert run.outcome.published == first.published and run.outcome.expected == first.expected
    assert done["static"].setup.redraws == ((500.0, "links"), (1000.0, "brokers"))
    assert len(done["ci"].outcome.trees) == len(done["ci"].outcome.swaps) + 1


def test_a_window_is_one_bucket_around_a_redraw_or_the_runs_last() -> None:
    s = setup(1, "ci", Evaluation(alpha=0.5, duration=30_000, rate=0.02, unsubscribe_rate=0.00004))
    assert window_buckets(s) == {
        "before-links-redraw": 9,
        "after-links-redraw": 10,
        "before-brokers-redraw": 19,
        "after-brokers-redraw": 20,
        "end": 29,
    }
    run = small_runs(3, "ci")["ci"]
    b = window_buckets(run.setup)["after-links-redraw"]
    assert b == 5
    out = run.outcome
    assert costs(out, range(b, b + 1))["cost_per_notification"] == out.cost[NOTIFY][b] / out.published[b]


def test_a_seed_repeats_exactly_and_another_seed_draws_another(small: dict[str, dict[str, Any]]) -> None:
    assert summaries(3, **SMALL) == small
    assert summaries(4, **SMALL)["static"] != small["static"]
    assert {f"ci-{w}" for w in window_buckets(setup(3, "ci", Evaluation(**SMALL)))} <= set(small)


def test_fig_5s_runs_redraw_nothing_and_a_bigger_neighbourhood_broadcasts_more() -> None:
    out = eta_summaries(3, [1, 2], **SMALL)
    assert set(out) == {
        f"{name}{part}" for name in ("static", "ci-eta-1", "ci-eta-2") for part in ("", "-reconfiguration")
    }
    one, two = out["ci-eta-1"]["selforg"], out["ci-eta-2"]["selforg"]
    assert two["broadcast_per_notification"] > one["broadcast_per_notification"] > 0
    static = runs(3, (None,), Evaluation(**SMALL), redrawn=False)["static"]
    assert static.setup.redraws == ()
    assert out["static"]["selforg"] == costs(static.outcome) | {"swaps": 0}
    assert out["static"] != summaries(3, **SMALL)["static"]  # the same tree and load, costs never redrawn
