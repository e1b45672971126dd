"""Headless Locust (master + 2 workers) against real brokers on loopback (issue 5)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from workload_plans import plan_for

from scotbed import contract
from scotbed import topology as T
from scotbed.filters import Filter
from scotbed.ports import free_port
from scotbed.workloads import plan as P
from scotbed.workloads.runner import WorkloadError, WorkloadSession, run_workload

SCOT = T.tree(T.path(3))


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    from scotbed.broker.launcher import LocalCluster

    with LocalCluster.from_topology(SCOT, tmp_path_factory.mktemp("brokers"), routing="rpf") as cluster:
        yield cluster.addresses()


def _events(run: Path) -> list[dict]:
    out = []
    for path in sorted((run / "events").glob("locust-*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines()]
    return out


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_headless_run_ends_by_itself_and_logs_every_publication_and_receive(
    brokers: dict[str, str], tmp_path: Path
) -> None:
    workload = {
        "subscribers": 40,
        "publishers": 4,
        "notifications_per_publisher": 60,
        "rate_per_minute": 750,
        "selectivity": 0.05,
        "drain_s": 1.5,
    }
    plan = plan_for(workload, SCOT, brokers, seed=3, run_id="e2e")
    P.write(plan, tmp_path / "plan.json")
    result = run_workload(tmp_path / "plan.json", tmp_path, workers=2, timeout_s=180)

    assert result.status["phase"] == "done" and result.returncode == 0
    assert result.worker_returncodes == [0, 0]
    assert (tmp_path / "locust" / "locust_stats.csv").exists() and (
        tmp_path / "locust" / "report.html"
    ).exists()
    assert result.workload == {"subscriptions": 40, "publications": 240}
    events = _events(tmp_path)
    pubs = [e for e in events if e["ev"] == "publish"]
    assert sorted(e["pub_id"] for e in pubs) == sorted(
        f"pub-{p.name}-{i}" for p in plan.publishers for i in range(60)
    )
    assert Counter(e["ev"] for e in events)["subscribe"] == 40
    # each worker probes its own gevent loop, as the brokers do theirs, every 250 ms of a run this long
    probes = [e for e in events if e["ev"] == contract.CLIENT_LOOP]
    assert {e["node"] for e in probes} == {"locust-w0", "locust-w1"}
    assert all(e["probes"] >= 1 and e["cpu"] >= 0 for e in probes)
    assert all(e["lag_ms_max"] >= e["lag_ms_mean"] >= 0 for e in probes)

    filters = {sid: f for s in plan.subscribers for sid, f in s.subscriptions}
    published = _jsonl(tmp_path / "workload" / "publications.jsonl")
    expected = {(p["pub_id"], sid) for p in published for sid, f in filters.items() if f.matches(p["attrs"])}
    received = [(e["pub_id"], e["sub_id"]) for e in events if e["ev"] == "receive"]
    assert len(expected) > 200
    assert len(received) == len(set(received))  # no duplicates
    assert set(received) == expected  # nothing missing, nothing extra

    subs = _jsonl(tmp_path / "workload" / "subscriptions.jsonl")
    assert {(s["sub_id"], s["broker"]) for s in subs} == {
        (s.subscriptions[0][0], s.broker) for s in plan.subscribers
    }
    assert all(Filter.from_json(s["filter"]) == filters[s["sub_id"]] for s in subs)

    # never sent before its intended time, and each publisher sends in its planned order (the gap's
    # size is a timing: benchmarks/locust_timing.py)
    assert all(e["sent_ns"] >= e["intended_ns"] for e in pubs)
    for p in plan.publishers:
        mine = sorted(
            (e for e in pubs if e["pub_id"].startswith(f"pub-{p.name}-")), key=lambda e: e["sent_ns"]
        )
        assert [e["pub_id"] for e in mine] == [f"pub-{p.name}-{i}" for i in range(60)]


@pytest.mark.slow
def test_hrp_burst_and_churn(brokers: dict[str, str], tmp_path: Path) -> None:
    workload = {
        "subscribers": 10,
        "publishers": 0,
        "drain_s": 1.0,
        "hrp": {"rate_per_minute": 12000, "notifications": 400, "start_s": 0.5, "interested_fraction": 0.2},
        "churn": {"rate_per_minute": 120, "mobility": "cluster", "away_s": 0.3},
    }
    plan = plan_for(workload, SCOT, brokers, seed=5, run_id="hrp")
    P.write(plan, tmp_path / "plan.json")
    result = run_workload(tmp_path / "plan.json", tmp_path, workers=2, timeout_s=180)
    assert result.status["phase"] == "done"

    events = _events(tmp_path)
    hrp = [e for e in events if e["ev"] == "publish" and e["node"] == "h0"]
    assert len(hrp) == 400 and len({e["pub_id"] for e in hrp}) == 400
    # every planned send happens, in planned order (its rate is a timing: benchmarks/locust_timing.py)
    by_sent = [e["pub_id"] for e in sorted(hrp, key=lambda e: (e["sent_ns"], e["intended_ns"]))]
    assert by_sent == [e["pub_id"] for e in sorted(hrp, key=lambda e: e["intended_ns"])]
    assert all(e["sent_ns"] >= e["intended_ns"] for e in hrp)
    interested = {
        sid for s in plan.subscribers for sid, f in s.subscriptions if f.to_text().startswith("symbol")
    }
    interested = {sid for sid in interested if sid.endswith("-1")}
    assert len(interested) == 2
    hrp_rx = [e for e in events if e["ev"] == "receive" and e["sub_id"] in interested]
    assert len(hrp_rx) == 800 and len({(e["pub_id"], e["sub_id"]) for e in hrp_rx}) == 800

    initial = {sid for s in plan.subscribers for sid, _ in s.subscriptions}
    planned = sorted((a.op, a.sub_id, a.broker) for s in plan.subscribers for a in s.actions)
    assert len(planned) >= 6
    done = sorted(
        (e["ev"], e["sub_id"], e["broker"] if e["ev"] == "subscribe" else "")
        for e in events
        if e["ev"] == "unsubscribe" or (e["ev"] == "subscribe" and e["sub_id"] not in initial)
    )
    assert done == planned
    unsubs = _jsonl(tmp_path / "workload" / "subscriptions.jsonl")
    assert Counter(u["op"] for u in unsubs)["unsubscribe"] == sum(1 for p in planned if p[0] == "unsubscribe")


def test_unreachable_broker_is_named_before_locust_starts(tmp_path: Path) -> None:
    dead = f"127.0.0.1:{free_port()}"  # nothing listens there
    addr = {b.id: dead for b in SCOT.brokers}
    plan = plan_for({"subscribers": 2, "publishers": 1}, SCOT, addr, seed=1)
    P.write(plan, tmp_path / "plan.json")
    session = WorkloadSession(tmp_path / "plan.json", tmp_path, workers=1, health_timeout_s=0.5)
    with pytest.raises(
        WorkloadError, match=rf"broker b-v0-0 at {dead} is not reachable: (UNAVAILABLE|DEADLINE_EXCEEDED)"
    ):
        session.start()
    assert session.master is None and not (tmp_path / "locust").exists()
