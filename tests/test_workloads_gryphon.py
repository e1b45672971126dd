"""Gryphon's workload generator: calibration, region-correlated Zipf preferences, Poisson arrivals."""

from __future__ import annotations

import itertools
import json
import statistics
from collections import Counter

import pytest
from workload_plans import plan_for

from scotbed import topology as T
from scotbed.experiment.spec import SpecError
from scotbed.workloads import gryphon as g
from scotbed.workloads import plan as P
from scotbed.workloads import plan_json

SCHEMA = g.GryphonSchema(attributes=10, values=3, zipf_s=1.0)


def test_calibration_is_exact_on_its_sample() -> None:
    regions = [0, 1, 2]
    p = g.calibrate(SCHEMA, regions, 0.02, seed=4, sample_clients=60, sample_events=40)
    sample_regions = [regions[k % 3] for k in range(60)]
    events = [e for r in regions for e in g.notifications(SCHEMA, r, 40, 5)]

    def fraction(dont_care: float) -> float:
        subs = [fs[0] for fs in g.subscriptions(SCHEMA, sample_regions, 1, dont_care, 4)]
        return g.matching_fraction(subs, events)

    assert fraction(p) >= 0.02
    assert fraction(p - 1e-6) < 0.02  # p is the smallest such value (up to the nudge past the threshold)


@pytest.mark.parametrize("target", [0.005, 0.01, 0.02])
def test_calibration_holds_out_of_sample(target: float) -> None:
    p = g.calibrate(SCHEMA, [0, 1, 2], target, seed=1)
    subs = [f for fs in g.subscriptions(SCHEMA, [k % 3 for k in range(300)], 2, p, 99) for f in fs]
    events = [e for r in range(3) for e in g.notifications(SCHEMA, r, 100, 98)]
    assert target / 2 <= g.matching_fraction(subs, events) <= target * 2


def test_regions_prefer_their_own_values_for_publishers_and_subscribers() -> None:
    for region in range(3):
        top = SCHEMA.ranked_value(region, 0, 0)
        pubs = Counter(e["a0"] for e in g.notifications(SCHEMA, region, 600, 3))
        assert pubs.most_common(1)[0][0] == top
        subs = g.subscriptions(SCHEMA, [region] * 300, 1, 0.0, 3)
        tests = Counter(fs[0].predicates[0].value for fs in subs)
        assert tests.most_common(1)[0][0] == top
    assert len({SCHEMA.ranked_value(r, 0, 0) for r in range(3)}) == 3


def test_dont_care_and_many_subscriptions_per_client() -> None:
    subs = g.subscriptions(SCHEMA, [0, 1], 5, 0.0, seed=2)
    assert [len(fs) for fs in subs] == [5, 5]
    assert all(len(f.predicates) == 10 and {p.op for p in f.predicates} == {"="} for fs in subs for f in fs)
    assert all(f.predicates == () for fs in g.subscriptions(SCHEMA, [0], 3, 1.0, 2) for f in fs)
    half = [f for fs in g.subscriptions(SCHEMA, [0] * 200, 1, 0.5, 2) for f in fs]
    assert 0.4 < statistics.mean(len(f.predicates) for f in half) / 10 < 0.6
    assert g.subscriptions(SCHEMA, [0, 1], 5, 0.3, 2) == g.subscriptions(SCHEMA, [0, 1], 5, 0.3, 2)


def test_arrivals_are_poisson() -> None:
    t = g.arrivals(50.0, 5000, seed=1)
    gaps = [b - a for a, b in zip([0.0, *t], t, strict=False)]
    assert all(x > 0 for x in gaps)
    assert abs(statistics.mean(gaps) - 1 / 50) < 0.1 / 50
    assert 0.9 < statistics.stdev(gaps) / statistics.mean(gaps) < 1.1  # exponential: CV = 1


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="dont_care"):
        g.subscriptions(SCHEMA, [0], 1, 1.5, 0)
    with pytest.raises(ValueError, match="target"):
        g.calibrate(SCHEMA, [0], 0.0, 0)
    with pytest.raises(ValueError, match="rate"):
        g.arrivals(0.0, 1, 0)
    with pytest.raises(ValueError, match="attribute"):
        g.GryphonSchema(attributes=0)


def _plan(workload: dict, seed: int = 3) -> P.Plan:
    scot = T.Scot(T.paper_fig2(), 3)
    addr = {b.id: f"127.0.0.1:{6000 + k}" for k, b in enumerate(scot.brokers)}
    return plan_for(workload, scot, addr, seed=seed, run_id="r1")


def test_a_gryphon_plan_round_trips_and_its_publishers_follow_their_region() -> None:
    w = {
        "schema": "gryphon",
        "gryphon": {"attributes": 8, "values": 3, "matching": 0.02, "subscriptions_per_client": 4},
        "subscribers": 12,
        "publishers": 3,
        "notifications_per_publisher": 50,
        "rate_per_minute": 600,
    }
    plan = _plan(w)
    assert plan_json.plan_from_json(json.loads(plan.dumps())).dumps() == plan.dumps() == _plan(w).dumps()
    assert plan.schema == "gryphon" and all(len(s.subscriptions) == 4 for s in plan.subscribers)
    assert all(
        p.attr in {f"a{i}" for i in range(8)}
        for s in plan.subscribers
        for _, f in s.subscriptions
        for p in f.predicates
    )
    pub = plan.publishers[0]
    offsets = [pub.intended_offset_ns(i) for i in range(pub.count)]
    assert offsets == sorted(offsets) and len(set(offsets)) == pub.count  # Poisson: irregular, increasing
    assert len({b - a for a, b in itertools.pairwise(offsets)}) > pub.count // 2
    regions = g.region_indexes(plan.brokers)
    quotes = plan.sources()[pub.name].stream(pub.seed)
    first = [next(quotes) for _ in range(200)]
    top = g.GryphonSchema(8, 3).ranked_value(regions[pub.broker], 0, 0)
    assert Counter(q["a0"] for q in first).most_common(1)[0][0] == top


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ({"schema": "gryphon", "gryphon": {"attributes": 0}}, "workload.gryphon"),
        ({"gryphon": {"attributes": 3}}, "only with schema: gryphon"),
        ({"schema": "gryphon", "gryphon": {"colour": 1}}, "colour"),
        ({"schema": "gryphon", "covering": {"degree": 30}}, "workload.covering: not with schema: gryphon"),
    ],
)
def test_bad_gryphon_sections_are_named(workload: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        _plan(workload)
