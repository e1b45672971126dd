"""The workload plan: builder, JSON round trip, determinism, churn, HRP, bursts (issue 5)."""

from __future__ import annotations

import functools
import json
import re

import pytest
from workload_plans import plan_for

from scotbed import topology as T
from scotbed.experiment.spec import SpecError
from scotbed.workloads import plan as P
from scotbed.workloads import plan_json
from scotbed.workloads.quotes import sample

SCOT = T.Scot(T.paper_fig2(), 3)
ADDR = {b.id: f"127.0.0.1:{6000 + k}" for k, b in enumerate(SCOT.brokers)}


def build(workload: dict, seed: int = 7) -> P.Plan:
    return plan_for(workload, SCOT, ADDR, seed=seed, run_id="r1")


def test_same_seed_gives_byte_identical_plan_files(tmp_path) -> None:
    w = {
        "subscribers": 30,
        "publishers": 3,
        "hrp": {"rate_per_minute": 6000, "notifications": 10, "interested_fraction": 0.1},
        "churn": {"rate_per_minute": 30, "mobility": "cluster"},
    }
    a = P.write(build(w), tmp_path / "a.json").read_bytes()
    b = P.write(build(w), tmp_path / "b.json").read_bytes()
    assert a == b
    assert a != P.write(build(w, seed=8), tmp_path / "c.json").read_bytes()
    assert plan_json.load(tmp_path / "a.json").dumps().encode() == a


def test_plan_ids_clients_and_schedule() -> None:
    plan = build(
        {"subscribers": 12, "publishers": 3, "rate_per_minute": 120, "notifications_per_publisher": 5}
    )
    assert [s.name for s in plan.subscribers][:2] == ["s00", "s01"]
    assert all(s.subscriptions[0][0] == f"sub-{s.name}-0" for s in plan.subscribers)
    assert all(b.address == ADDR[b.id] for b in plan.brokers)
    p = plan.publishers[0]
    assert p.rate_per_s == 2.0
    assert [p.intended_offset_ns(i) for i in range(3)] == [0, 500_000_000, 1_000_000_000]
    assert plan.end_offset_s() == 2.0


def test_time_scale_divides_rates() -> None:
    plan = build({"subscribers": 2, "publishers": 1, "rate_per_minute": 600, "time_scale": 2.0})
    assert plan.publishers[0].rate_per_s == 5.0


def test_hrp_interest_is_exactly_the_chosen_fraction() -> None:
    plan = build(
        {
            "subscribers": 40,
            "publishers": 2,
            "hrp": {"rate_per_minute": 12000, "notifications": 50, "interested_fraction": 0.1},
        }
    )
    hrp = plan.publishers[-1]
    assert (hrp.kind, hrp.count, hrp.rate_per_s) == ("hrp", 50, 200.0)
    interested = [s for s in plan.subscribers if len(s.subscriptions) == 2]
    assert len(interested) == 4
    assert all(s.broker != hrp.broker for s in interested)
    hrp_quotes = sample(plan.sources()[hrp.name], 200, seed=1)
    regular = sample(plan.sources()["p0"], 2000, seed=1)
    for s in plan.subscribers:
        base = s.subscriptions[0][1]
        assert not any(base.matches(q) for q in hrp_quotes)
        if s in interested:
            assert all(s.subscriptions[1][1].matches(q) for q in hrp_quotes)
            assert not any(s.subscriptions[1][1].matches(q) for q in regular)


@pytest.mark.parametrize("mobility", ["none", "region", "cluster"])
def test_churn_moves_subscribers_within_region_or_cluster(mobility: str) -> None:
    plan = build(
        {
            "subscribers": 20,
            "publishers": 1,
            "notifications_per_publisher": 61,
            "rate_per_minute": 60,
            "churn": {"rate_per_minute": 20, "mobility": mobility, "away_s": 0.5},
        }
    )
    by = SCOT.by_id
    cycles = 0
    for s in plan.subscribers:
        where, active = s.broker, s.subscriptions[0][0]
        acts = list(s.actions)
        for un, sub in zip(acts[::2], acts[1::2], strict=True):
            assert (un.op, un.sub_id, sub.op) == ("unsubscribe", active, "subscribe")
            assert sub.at_s == pytest.approx(un.at_s + 0.5)
            a, b = by[where], by[sub.broker]
            if mobility == "none":
                assert b == a
            elif mobility == "region":
                assert b.region == a.region and b != a
            else:
                assert b.cluster == a.cluster and b != a
            assert re.fullmatch(rf"sub-{s.name}-\d+", sub.sub_id)
            where, active = sub.broker, sub.sub_id
            cycles += 1
    assert cycles == 21  # one every 3 s over the 60 s of publications, both ends included


def test_unsubscription_burst_removes_covering_roots() -> None:
    plan = build(
        {
            "subscribers": 93,
            "publishers": 1,
            "covering": {"degree": 30},
            "unsub_burst": {"count": 3, "interval_ms": 250, "start_s": 1},
        }
    )
    acts = sorted((a.at_s, a.sub_id) for s in plan.subscribers for a in s.actions)
    assert acts == [(1.0, "sub-s00-0"), (1.25, "sub-s01-0"), (1.5, "sub-s02-0")]


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ({"subscriberz": 3}, r"^workload.subscriberz: unknown key; allowed here: schema, gryphon, symbols"),
        ({"hrp": {"rate": 3}}, r"(?m)^workload.hrp.rate: unknown key"),
        ({"unsub_burst": {"count": 1}}, r"^workload.unsub_burst: needs workload.covering"),
        ({"placement": "nowhere"}, r"^workload.placement.mode: 'nowhere' is not allowed"),
        (
            {"covering": {"degree": 30}, "unsub_burst": {"count": 99}},
            r"^workload.unsub_burst.count: 99 > the",
        ),
    ],
)
def test_bad_workload_sections_are_named(workload: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        build({"subscribers": 4, "publishers": 1, **workload})


def test_region_mobility_on_a_tree_is_an_error() -> None:
    tree = T.tree(T.path(3))
    addr = {b.id: "127.0.0.1:1" for b in tree.brokers}
    with pytest.raises(
        SpecError, match=r"^workload.churn.mobility: 'region' needs a SCOT with connectivity >= 2"
    ):
        plan_for(
            {"subscribers": 3, "publishers": 1, "churn": {"rate_per_minute": 6, "mobility": "region"}},
            tree,
            addr,
            seed=1,
        )


def test_plan_names_a_client_without_a_host() -> None:
    params = plan_for({"subscribers": 1, "publishers": 0}, SCOT, ADDR)
    assert [s.name for s in params.subscribers] == ["s0"]
    from scotbed.experiment.spec import parse_spec

    spec = parse_spec({"name": "t", "workload": {"subscribers": 2, "publishers": 0}})
    with pytest.raises(P.PlanError, match=r"^hosts: no host broker for client\(s\) \['s1'\]"):
        P.build_plan(spec.workload.params(spec.base_dir), SCOT, ADDR, {"s0": "b-a-0"}, seed=1)


@functools.cache
def _plan_text() -> str:
    return build({"subscribers": 3, "publishers": 1}).dumps()


def _doc() -> dict:
    return json.loads(_plan_text())


def test_unknown_attribute_in_a_plan_filter_names_the_subscription() -> None:
    doc = _doc()
    doc["subscribers"][1]["subscriptions"][0]["filter"] = [{"attr": "price", "op": "<", "value": 3}]
    with pytest.raises(
        P.PlanError,
        match=r"plan.subscribers\[1\].subscriptions\[0\].filter\[0\]: unknown attribute "
        r"'price'; known: change, change_pct, close, date, exchange",
    ):
        plan_json.plan_from_json(doc)


def test_plan_reader_names_bad_fields() -> None:
    doc = _doc()
    doc["publishers"][0]["broker"] = "b-z-9"
    with pytest.raises(P.PlanError, match=r"plan.publishers\[0\].broker: unknown broker 'b-z-9'"):
        plan_json.plan_from_json(doc)
    doc = _doc()
    doc["subscribers"][2]["subscriptions"][0]["sub_id"] = doc["subscribers"][0]["subscriptions"][0]["sub_id"]
    with pytest.raises(P.PlanError, match=r"sub_id 'sub-s0-0' is used twice"):
        plan_json.plan_from_json(doc)
    doc = _doc()
    doc["release"] = {"mode": "later"}
    with pytest.raises(P.PlanError, match=r"plan.release.mode: 'later' is not one of"):
        plan_json.plan_from_json(doc)
