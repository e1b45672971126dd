"""Per-link latency emulation, aCOL and iCOL apart, measured on real brokers (spec → plan → broker)."""

from __future__ import annotations

import asyncio
import random
import statistics
from pathlib import Path

import pytest

from scotbed.broker.client import BrokerClient
from scotbed.broker.fleet import wait_quiescent
from scotbed.broker.latency import DelayLine
from scotbed.broker.launcher import LocalCluster
from scotbed.experiment.spec import build_scot, parse_spec
from scotbed.orchestrator.plan import broker_configs, link_delays

SPEC = {
    "name": "latency",
    "topology": {"kind": "scot", "acyclic": {"kind": "path", "n": 2}, "connectivity": 2},
    "routing": "flooding",
    "links": {"acol_latency_ms": 150, "icol_latency_ms": 40, "jitter_ms": 10},
}


def test_delays_are_drawn_around_the_latency_and_never_reorder() -> None:
    line = DelayLine(100.0, 30.0, random.Random(1))
    dues = [line.due(k * 0.001) for k in range(1000)]
    assert dues == sorted(dues)
    first = [d - k * 0.001 for k, d in enumerate(dues)]
    assert min(first) >= 0.070 and first[0] <= 0.130
    assert not DelayLine(0.0, 0.0).active and DelayLine(0.0, 1.0).active


def test_the_spec_sets_acol_and_icol_delays_apart_scaled_by_time_scale() -> None:
    spec = parse_spec({**SPEC, "workload": {"time_scale": 2.0}})
    assert link_delays(spec) == {"aCOL": (300.0, 20.0), "iCOL": (80.0, 20.0)}
    configs = broker_configs(
        spec, build_scot(spec), {b: "127.0.0.1:0" for b in [b.id for b in build_scot(spec).brokers]}
    )
    kinds = {(n.kind, n.latency_ms, n.jitter_ms) for c in configs for n in c.neighbours}
    assert kinds == {("aCOL", 300.0, 20.0), ("iCOL", 80.0, 20.0)}


async def _delays(cluster: LocalCluster, n: int) -> dict[str, list[float]]:
    """ms from the publisher's send to the subscriber's host broker, for the aCOL and the iCOL neighbour."""
    hosts = {"acol": "b-v1-0", "icol": "b-v0-1"}
    clients = {k: BrokerClient(cluster.address(b)) for k, b in hosts.items()}
    async with BrokerClient(cluster.address("b-v0-0")) as pub:
        streams = {k: await c.subscribe(f"s-{k}", "x >= 0") for k, c in clients.items()}
        await wait_quiescent(cluster.addresses(), timeout_s=60)
        for k in range(n):
            await pub.publish([(f"p{k}", {"x": k})])
            await asyncio.sleep(0.01)
        await wait_quiescent(cluster.addresses(), timeout_s=60)
        for _ in range(200):
            if all(len(s.received) >= n for s in streams.values()):
                break
            await asyncio.sleep(0.05)
    for c in clients.values():
        await c.close()
    return {k: [(d.broker_ns - d.notification.sent_ns) / 1e6 for d in s.received] for k, s in streams.items()}


@pytest.mark.slow
def test_acol_and_icol_latencies_show_in_measured_delivery_delays(tmp_path: Path) -> None:
    spec = parse_spec(SPEC)
    scot = build_scot(spec)
    configs = broker_configs(spec, scot, {b: "127.0.0.1:0" for b in [x.id for x in scot.brokers]})
    with LocalCluster(configs, tmp_path) as cluster:
        delays = asyncio.run(_delays(cluster, 40))
    assert len(delays["acol"]) == len(delays["icol"]) == 40
    # lower bounds hold under any load: no copy arrives before its link's latency minus jitter
    assert min(delays["acol"]) >= 140.0, delays["acol"]
    assert min(delays["icol"]) >= 30.0, delays["icol"]
    med = {k: statistics.median(v) for k, v in delays.items()}
    print(f"median delay ms: aCOL {med['acol']:.1f} (150 ± 10 set), iCOL {med['icol']:.1f} (40 ± 10 set)")
    assert med["icol"] < med["acol"]
