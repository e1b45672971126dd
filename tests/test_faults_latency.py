"""The runtime ``latency`` fault: Admin.SetLinkLatency on real brokers, and the timeline that calls it."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import grpc
import pytest
from scotbed_cli import run_quickstart

from scotbed import contract, topology
from scotbed.broker.client import BrokerClient
from scotbed.broker.fleet import status_all
from scotbed.broker.latency import DelayLine
from scotbed.broker.launcher import LocalCluster
from scotbed.experiment.spec import SpecError, parse_spec
from scotbed.experiment.spec_faults import FaultSpec
from scotbed.orchestrator.faults import Injector, check
from scotbed.orchestrator.locust_driver import backlog

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


def test_a_fault_latency_of_an_hour_or_more_is_refused_by_the_spec() -> None:
    fault = {"at_s": 1, "action": "latency", "broker": A, "neighbour": B, "latency_ms": 1e12}
    too_long = r"faults\[0\]\.latency_ms: 1000000000000\.0 is not allowed: .* 3600000"
    with pytest.raises(SpecError, match=too_long):
        parse_spec({"name": "x", "faults": [fault]})
    with pytest.raises(SpecError, match=r"faults\[0\]\.jitter_ms: .* 3600000"):
        parse_spec({"name": "x", "faults": [{**fault, "latency_ms": 5, "jitter_ms": 3.6e6}]})


def test_a_lower_latency_releases_the_batches_a_longer_one_holds_in_order() -> None:
    async def scenario() -> list[str]:
        line = DelayLine(600_000.0, 0.0)
        written: list[str] = []

        async def write(item: str) -> None:
            written.append(item)

        task = asyncio.create_task(line.drain_to(write))
        for k in range(5):
            line.put(f"b{k}")
        await asyncio.sleep(0.05)
        assert written == []
        line.set(0.0, 0.0)
        line.put("b5")
        await asyncio.sleep(0.05)
        task.cancel()
        return written

    assert asyncio.run(scenario()) == [f"b{k}" for k in range(6)]


def test_a_raised_latency_keeps_the_batches_already_in_the_line() -> None:
    async def scenario() -> list[float]:
        line = DelayLine(100.0, 0.0)
        line.put("b0")
        before = line.pending[0][0]
        line.set(600_000.0, 0.0)
        line.put("b1")
        return [before, line.pending[0][0], line.pending[1][0]]

    b0, b0_after, b1 = asyncio.run(scenario())
    assert b0 == b0_after and b1 - b0 > 500


@pytest.mark.slow
def test_held_batches_are_backlog_and_a_reset_latency_delivers_them_once_in_order(tmp_path: Path) -> None:
    """A latency of 10 min holds the batches (the brokers are not quiescent and the drain counts them as
    backlog); setting it back to 0 delivers each once, in order; one of an hour or more is refused."""
    with _cluster(tmp_path) as c:

        async def scenario() -> tuple[int, bool, list[str], int, bool]:
            async with BrokerClient(c.address(B)) as sc, BrokerClient(c.address(A)) as pc:
                stream = await sc.subscribe("s", "price > 0")
                await asyncio.to_thread(c.wait_quiescent)
                await pc.set_link_latency(600_000.0, 0.0, B)
                for k in range(5):
                    await pc.publish([(f"p{k}", {"price": k + 1})])
                    await asyncio.sleep(0.02)
                await asyncio.sleep(0.5)
                held = await status_all(c.addresses())
                await pc.set_link_latency(0.0, 0.0, B)
                got = [(await stream.next(timeout=10)).notification.pub_id for _ in range(5)]
                await asyncio.sleep(0.3)
                after = await status_all(c.addresses())
                extra = len(stream.received) - 5
                for ms in (1e300, 3.6e6, float("nan")):
                    with pytest.raises(grpc.aio.AioRpcError) as err:
                        await pc.set_link_latency(ms, 0.0, B)
                    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                    assert "must be in [0, 3.6e+06) ms (1 h)" in str(err.value.details())
                await pc.publish([("p5", {"price": 6})])
                assert (await stream.next(timeout=10)).notification.pub_id == "p5"
                await stream.close()
            return backlog(held), held[A].quiescent, got, extra, after[A].quiescent

        held, quiescent_held, got, extra, quiescent_after = asyncio.run(scenario())
    assert (held, quiescent_held) == (5, False)
    assert got == [f"p{k}" for k in range(5)] and extra == 0 and quiescent_after


@pytest.mark.slow
@pytest.mark.spark
def test_a_latency_fault_longer_than_the_drain_reads_as_an_undrained_backlog(tmp_path: Path) -> None:
    """Every delivery crosses a link whose latency outlasts ``timeouts.drain_s``: the run ends with
    them held on the link, which is an undrained backlog (exit 4), not missing deliveries (exit 1)."""
    fault = f"{{at_s: 0, action: latency, broker: {A}, neighbour: {B}, latency_ms: 600000}}"
    sets = [
        "topology.kind=tree",
        "topology.connectivity=1",
        "topology.acyclic={kind: path, n: 2}",
        "routing=rpf",
        f"workload.placement={{mode: explicit, brokers: {{p0: {A}, s0: {B}, s1: {B}}}}}",
        "workload.subscribers=2",
        "workload.publishers=1",
        "workload.selectivity=0.3",
        "workload.notifications_per_publisher=20",
        "workload.rate_per_minute=600",
        "timeouts.drain_s=3",
        f"faults=[{fault}]",
    ]
    proc = run_quickstart(tmp_path, sets, timeout=900)
    (run,) = list((tmp_path / "runs").iterdir())
    assert proc.returncode == 4, proc.stderr[-3000:]
    drain = json.loads((run / contract.DRAIN).read_text())
    assert drain["quiescent"] is False and drain["backlog_at_stop"] > 0
    n = json.loads((run / contract.SUMMARY).read_text())["notifications"]
    assert n["missing"] == 0 and n["undelivered_at_stop"] == n["expected_deliveries"] > 0
