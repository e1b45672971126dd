"""The runtime ``latency`` fault: Admin.SetLinkLatency on real brokers, and the timeline that calls it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import grpc
import pytest

from scotbed import contract, topology
from scotbed.broker.client import BrokerClient
from scotbed.broker.launcher import LocalCluster
from scotbed.orchestrator.faults import FaultSpec, Injector, check

A, B = "b-v0-0", "b-v1-0"
SCOT = topology.tree(topology.path(2))


def _cluster(tmp_path: Path) -> LocalCluster:
    return LocalCluster.from_topology(SCOT, tmp_path, routing="rpf", matching="counting")


async def _delays_ms(c: LocalCluster, n: int, tag: str) -> list[float]:
    """Publish ``n`` notifications at A one by one; how long each took to reach the subscriber at B."""
    async with BrokerClient(c.address(B)) as sc, BrokerClient(c.address(A)) as pc:
        stream = await sc.subscribe(f"s-{tag}", "price > 0")
        await asyncio.to_thread(c.wait_quiescent)
        out = []
        for k in range(n):
            t0 = time.monotonic()
            await pc.publish([(f"{tag}{k}", {"price": k + 1})])
            d = await stream.next(timeout=10)
            out.append((time.monotonic() - t0) * 1000.0)
            assert d.notification.pub_id == f"{tag}{k}"
        await stream.close()
        return out


def test_a_latency_fault_names_a_link_and_a_delay() -> None:
    ids = {b.id for b in SCOT.brokers}
    ok = [
        FaultSpec.model_validate(
            {"at_s": 1, "action": "latency", "broker": A, "neighbour": B, "latency_ms": 5}
        )
    ]
    assert check(ok, ids, lambda b: ids - {b}) == []
    bad = [
        FaultSpec.model_validate({"at_s": 1, "action": "latency", "broker": A, "neighbour": B}),
        FaultSpec.model_validate({"at_s": 1, "action": "kill", "broker": A, "jitter_ms": 3}),
    ]
    assert check(bad, ids, lambda b: ids - {b}) == [
        "faults[0].latency_ms: required for latency, and (with jitter_ms) only there",
        "faults[1].latency_ms: required for latency, and (with jitter_ms) only there",
        "faults[1]: a kill needs a later restart of the same target",
    ]


@pytest.mark.slow
def test_set_link_latency_delays_batches_from_then_on_and_back(tmp_path: Path) -> None:
    with _cluster(tmp_path) as c:

        async def scenario() -> tuple[list[float], list[float], list[float]]:
            fast = await _delays_ms(c, 5, "f")
            async with BrokerClient(c.address(A)) as admin:
                await admin.set_link_latency(250.0, 0.0, B)
                link = (await admin.status()).links[0]
                assert (link.neighbour, link.latency_ms, link.jitter_ms) == (B, 250.0, 0.0)
                slow = await _delays_ms(c, 3, "s")
                await admin.set_link_latency(0.0)  # "" = every link
                back = await _delays_ms(c, 5, "b")
                for bad, code in (((-1.0, 0.0, B), "INVALID_ARGUMENT"), ((1.0, 0.0, "b-x-0"), "NOT_FOUND")):
                    with pytest.raises(grpc.aio.AioRpcError) as err:
                        await admin.set_link_latency(*bad)
                    assert err.value.code().name == code
            return fast, slow, back

        fast, slow, back = asyncio.run(scenario())
    assert max(fast) < 150 and max(back) < 150
    assert all(250 <= d < 1000 for d in slow), slow


@pytest.mark.slow
def test_the_timeline_sets_latency_on_both_ends_of_the_link(tmp_path: Path) -> None:
    spec = {"at_s": 0, "action": "latency", "broker": A, "neighbour": B, "latency_ms": 40.0, "jitter_ms": 5.0}
    with _cluster(tmp_path) as c:
        injector = Injector([FaultSpec.model_validate(spec)], c, tmp_path)
        injector.start()
        deadline = time.monotonic() + 10
        while not (tmp_path / contract.FAULTS).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        injector.stop()
        status = c.status_all()
    assert injector.error is None and injector.down == set()
    assert {(b, s.links[0].latency_ms, s.links[0].jitter_ms) for b, s in status.items()} == {
        (A, 40.0, 5.0),
        (B, 40.0, 5.0),
    }
