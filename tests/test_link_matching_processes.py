"""Link matching on real broker processes (loopback): exactly-once, rpf's exact message counts, steps."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from broker_workload import make_workload
from test_broker_processes import FAST_LOG, FIG2_K3, TREE, _delta, _run, _total

from scotbed.broker.eventlog import read_events
from scotbed.broker.launcher import LocalCluster
from scotbed.broker.sim import SimNetwork
from scotbed.messages import Publication


@pytest.mark.slow
def test_tree7_link_matching_on_real_brokers(tmp_path: Path) -> None:
    brokers = [b.id for b in TREE.brokers]
    wl = make_workload(brokers, n_subs=20, n_pubs=40, seed=3)
    with LocalCluster.from_topology(
        TREE, tmp_path, launcher={"stop_grace_s": 10.0}, routing="link-matching", matching="pst", log=FAST_LOG
    ) as cluster:
        res = asyncio.run(_run(cluster, wl))
        logs = {b: cluster.event_log(b) for b in brokers}
    got = res["got"]
    assert set(got) == wl.expected() and set(got.values()) == {1}  # type: ignore[attr-defined]
    n, subs = len(brokers), len(wl.subs)
    assert _total(res["subs"], "sub_out") == _total(res["subs"], "sub_in") == subs * (n - 1)  # type: ignore[arg-type]
    assert _delta(res, "pubs", "unsubs", "unsub_out") == subs * (n - 1)
    rpf = SimNetwork(TREE, "rpf")  # the same workload through rpf in the simulator: its exact link count
    for sub_id, host, flt in wl.subs:
        rpf.subscribe(sub_id, host, flt)
    for pub_id, host, attrs in wl.pubs:
        rpf.publish(pub_id, host, attrs)
    rpf_links = sum(isinstance(s.msg, Publication) for s in rpf.sent)
    assert _delta(res, "subs", "pubs", "notif_out") == rpf_links
    matches = [e for b in brokers for e in read_events(logs[b]) if e["ev"] == "match"]
    assert matches and all(isinstance(e["steps"], int) and e["steps"] >= 1 for e in matches)


@pytest.mark.slow
def test_fig2_k3_link_matching_exactly_once_on_real_brokers(tmp_path: Path) -> None:
    brokers = [b.id for b in FIG2_K3.brokers]
    wl = make_workload(brokers, n_subs=24, n_pubs=40, seed=5)
    with LocalCluster.from_topology(
        FIG2_K3,
        tmp_path,
        launcher={"stop_grace_s": 10.0},
        routing="link-matching",
        matching="pst",
        log=FAST_LOG,
    ) as cluster:
        res = asyncio.run(_run(cluster, wl))
    got = res["got"]
    assert set(got) == wl.expected() and set(got.values()) == {1}  # type: ignore[attr-defined]
    n, subs = len(brokers), len(wl.subs)
    assert _total(res["subs"], "sub_out") == subs * (n - 1)  # type: ignore[arg-type]
    sim = SimNetwork(FIG2_K3, "link-matching")  # the simulator's exact notification count
    for sub_id, host, flt in wl.subs:
        sim.subscribe(sub_id, host, flt)
    for pub_id, host, attrs in wl.pubs:
        sim.publish(pub_id, host, attrs)
    assert _delta(res, "subs", "pubs", "notif_out") == sum(isinstance(s.msg, Publication) for s in sim.sent)
