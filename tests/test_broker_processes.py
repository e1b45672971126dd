"""Real broker processes on loopback, started by the launcher: delivery, counts, state, robustness."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import grpc
import pytest
from broker_workload import Workload, make_workload

from scotbed import topology
from scotbed.broker.client import BrokerClient, SubscriptionStream
from scotbed.broker.eventlog import read_events
from scotbed.broker.fleet import tables_all, wait_quiescent
from scotbed.broker.launcher import LocalCluster
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg

TREE = topology.tree(topology.kary(2, 2))
FIG2_K3 = topology.Scot(topology.paper_fig2(), 3)
FIG8_K5 = topology.Scot(topology.paper_fig8(), 5)
FAST_LOG = {"sample_interval_ms": 100.0, "flush_interval_ms": 100.0}


def _cluster(
    scot: topology.Scot, tmp_path: Path, routing: str, log: dict[str, float] | None = None, **kw: object
) -> LocalCluster:
    return LocalCluster.from_topology(
        scot,
        tmp_path,
        launcher={"stop_grace_s": 10.0},
        routing=routing,
        matching="counting",
        log={**FAST_LOG, **(log or {})},
        **kw,
    )


async def _run(cluster: LocalCluster, wl: Workload, unsubscribe: bool = True) -> dict[str, object]:
    """Subscribe, publish, collect; returns deliveries and the counter deltas of each phase."""
    addrs = cluster.addresses()
    clients = {b: BrokerClient(a) for b, a in addrs.items()}
    try:
        streams: list[SubscriptionStream] = await asyncio.gather(
            *(clients[host].subscribe(sid, flt, "test") for sid, host, flt in wl.subs)
        )
        after_subs = await wait_quiescent(addrs, timeout_s=60)
        by_host: dict[str, list[tuple[str, dict[str, object]]]] = {}
        for pid, host, attrs in wl.pubs:
            by_host.setdefault(host, []).append((pid, attrs))  # type: ignore[arg-type]
        await asyncio.gather(*(clients[h].publish(ps, "test") for h, ps in by_host.items()))  # type: ignore[arg-type]
        after_pubs = await wait_quiescent(addrs, timeout_s=60)
        delivered = sum(r.counters["deliver"] for r in after_pubs.values())
        deadline = time.monotonic() + 10
        while sum(len(s.received) for s in streams) < delivered and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        got = Counter((d.notification.pub_id, s.sub_id) for s in streams for d in s.received)
        tables_before = await tables_all(addrs)
        if unsubscribe:
            half = len(streams) // 2
            assert all(await asyncio.gather(*(clients[h].unsubscribe(s) for s, h, _ in wl.subs[:half])))
            await asyncio.gather(*(s.close() for s in streams[half:]))  # stream end = unsubscription
        after_unsubs = await wait_quiescent(addrs, timeout_s=60)
        tables_after = await tables_all(addrs)
        return {
            "got": got,
            "subs": after_subs,
            "pubs": after_pubs,
            "unsubs": after_unsubs,
            "tables_before": tables_before,
            "tables_after": tables_after,
        }
    finally:
        await asyncio.gather(*(c.close() for c in clients.values()))


def _total(status: dict[str, pb.StatusReply], counter: str) -> int:
    return sum(r.counters[counter] for r in status.values())


def _delta(res: dict[str, object], a: str, b: str, counter: str) -> int:
    return _total(res[b], counter) - _total(res[a], counter)  # type: ignore[arg-type]


def _check(scot: topology.Scot, routing: str, res: dict[str, object], wl: Workload) -> None:
    got: Counter[tuple[str, str]] = res["got"]  # type: ignore[assignment]
    assert set(got) == wl.expected(), "missing or false-positive deliveries"
    assert set(got.values()) == {1}, "duplicate deliveries"
    n, e, subs = len(scot.brokers), len(scot.links), len(wl.subs)
    per_sub = {"flooding": 0, "rpf": n - 1, "bid": 2 * e - n + 1}[routing]
    assert _total(res["subs"], "sub_out") == subs * per_sub  # type: ignore[arg-type]
    assert _total(res["subs"], "sub_in") == subs * per_sub  # type: ignore[arg-type]
    assert _delta(res, "pubs", "unsubs", "unsub_out") == subs * per_sub
    if routing == "flooding":
        assert _delta(res, "subs", "pubs", "notif_out") == len(wl.pubs) * (2 * e - n + 1)
    tables_before: dict[str, pb.TableReply] = res["tables_before"]  # type: ignore[assignment]
    stored = sum(len(t.entries) for t in tables_before.values())
    assert stored == subs * (1 if routing == "flooding" else n)
    tables_after: dict[str, pb.TableReply] = res["tables_after"]  # type: ignore[assignment]
    assert {b: len(t.entries) for b, t in tables_after.items()} == {b.id: 0 for b in scot.brokers}


@pytest.mark.slow
@pytest.mark.parametrize("routing", ["flooding", "rpf", "bid"])
def test_tree7_exactly_once_counts_and_unsubscription(routing: str, tmp_path: Path) -> None:
    wl = make_workload([b.id for b in TREE.brokers], n_subs=20, n_pubs=40, seed=3)
    with _cluster(TREE, tmp_path, routing) as cluster:
        res = asyncio.run(_run(cluster, wl))
    _check(TREE, routing, res, wl)


@pytest.mark.slow
@pytest.mark.parametrize("routing", ["flooding", "bid"])
def test_fig2_k3_exactly_once_counts_and_unsubscription(routing: str, tmp_path: Path) -> None:
    wl = make_workload([b.id for b in FIG2_K3.brokers], n_subs=24, n_pubs=40, seed=5)
    with _cluster(FIG2_K3, tmp_path, routing) as cluster:
        res = asyncio.run(_run(cluster, wl))
    _check(FIG2_K3, routing, res, wl)


@pytest.mark.slow
def test_fig8_k5_bid_75_processes(tmp_path: Path) -> None:
    wl = make_workload([b.id for b in FIG8_K5.brokers], n_subs=12, n_pubs=30, seed=8)
    with _cluster(FIG8_K5, tmp_path, "bid") as cluster:
        res = asyncio.run(_run(cluster, wl))
    _check(FIG8_K5, "bid", res, wl)
    assert _total(res["subs"], "sub_out") == 366 * len(wl.subs)  # type: ignore[arg-type]


async def _publish_and_receive(cluster: LocalCluster, pub_at: str, sub_at: str, n: int) -> list[str]:
    async with BrokerClient(cluster.address(sub_at)) as sc, BrokerClient(cluster.address(pub_at)) as pc:
        stream = await sc.subscribe("s1", "price > 0")
        await wait_quiescent(cluster.addresses(), timeout_s=30)
        await pc.publish([(f"p{k}", {"price": k + 1}) for k in range(n)])
        await wait_quiescent(cluster.addresses(), timeout_s=30)
        for _ in range(100):
            if len(stream.received) >= n:
                break
            await asyncio.sleep(0.02)
        return stream.pub_ids()


@pytest.mark.slow
def test_sigterm_leaves_a_complete_parseable_event_log(tmp_path: Path) -> None:
    scot = topology.tree(topology.path(3))
    with _cluster(
        scot, tmp_path, "rpf", log={"buffer_events": 100_000, "flush_interval_ms": 60_000.0}
    ) as cluster:
        ids = [b.id for b in scot.brokers]
        got = asyncio.run(_publish_and_receive(cluster, ids[0], ids[2], 50))
        assert sorted(got) == sorted(f"p{k}" for k in range(50))
        status = cluster.status_all()
        codes = {i: cluster.terminate(i) for i in ids}
    assert codes == dict.fromkeys(ids, 0)
    for i in ids:
        events = read_events(cluster.event_log(i))  # strict: every line parses
        kinds = Counter(e["ev"] for e in events)
        assert all(e["node"] == i and isinstance(e["ts_ns"], int) for e in events)
        c = status[i].counters
        assert kinds["notif_out"] == c["notif_out"]
        assert kinds["deliver"] == c["deliver"]
        assert kinds["match"] == c["match"] == 50
    middle = read_events(cluster.event_log(ids[1]))
    assert [e["link"] for e in middle if e["ev"] == "notif_in"] == [ids[0]] * 50
    assert {
        (e["pub_id"], e["sub_id"]) for e in read_events(cluster.event_log(ids[2])) if e["ev"] == "deliver"
    } == {(f"p{k}", "s1") for k in range(50)}


@pytest.mark.slow
def test_killed_and_restarted_neighbour_gets_its_queued_messages(tmp_path: Path) -> None:
    scot = topology.tree(topology.path(3))
    ids = [b.id for b in scot.brokers]
    with _cluster(
        scot, tmp_path, "flooding", limits={"redial_initial_ms": 20.0, "redial_max_ms": 200.0}
    ) as c:

        async def scenario() -> list[str]:
            async with BrokerClient(c.address(ids[2])) as sc, BrokerClient(c.address(ids[0])) as pc:
                stream = await sc.subscribe("s1", "price > 0")
                c.kill(ids[1])
                await pc.publish([(f"p{k}", {"price": k + 1}) for k in range(30)])
                await asyncio.sleep(0.3)
                st = (await pc.status()).links[0]
                assert st.neighbour == ids[1] and not st.connected and st.output_len + st.unacked == 30
                await asyncio.to_thread(c.start_broker, ids[1])
                await asyncio.to_thread(c.wait_ready, [ids[1]])
                await wait_quiescent(c.addresses(), timeout_s=30)
                for _ in range(100):
                    if len(stream.received) >= 30:
                        break
                    await asyncio.sleep(0.02)
                await asyncio.sleep(0.2)
                return stream.pub_ids()

        got = asyncio.run(scenario())
    assert sorted(got) == sorted(f"p{k}" for k in range(30))


@pytest.mark.slow
def test_unknown_neighbour_malformed_and_oversized_are_refused(tmp_path: Path) -> None:
    scot = topology.tree(topology.path(2))
    with _cluster(scot, tmp_path, "rpf", limits={"max_message_bytes": 64 * 1024}) as cluster:
        addr = cluster.address("b-v0-0")

        async def scenario() -> None:
            async with grpc.aio.insecure_channel(addr) as ch:
                call = pbg.LinkStub(ch).Connect()
                hello = pb.Batch(from_broker="b-intruder-0", seq=0)
                hello.envelopes.add().control.kind = "hello"
                await call.write(hello)
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await call.read()
                assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
                assert "b-intruder-0" in (err.value.details() or "")
                broker = pbg.BrokerStub(ch)
                bad = pb.SubscribeRequest(
                    sub_id="s",
                    filter=pb.Filter(predicates=[pb.Predicate(attr="x", op="~", value=pb.Value(i=1))]),
                )
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await broker.Subscribe(bad).read()
                assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "'~'" in (
                    err.value.details() or ""
                )
                big = pb.PublishRequest(notifications=[pb.Notification(pub_id="p", publisher="x" * 100_000)])
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await broker.Publish(big)
                assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "max_message_bytes" in (err.value.details() or "")
                status = await pbg.AdminStub(ch).Status(pb.StatusRequest())
                assert status.counters["refused"] == 1 and status.counters["rejected"] == 2

        asyncio.run(scenario())
        health = [sys.executable, "-m", "scotbed.broker.health"]
        assert subprocess.run([*health, addr], timeout=30).returncode == 0
        cluster.terminate("b-v0-0")
        down = subprocess.run([*health, addr, "--timeout", "1"], capture_output=True, text=True, timeout=30)
        assert down.returncode == 1 and "UNAVAILABLE" in down.stderr


def test_bad_config_exits_2_naming_the_field(tmp_path: Path) -> None:
    cfg = {
        "id": "b-a-0",
        "vertex": "a",
        "index": 0,
        "type": "edge",
        "listen": "127.0.0.1:0",
        "matching": "fast",
    }
    path = tmp_path / "broker.json"
    path.write_text(json.dumps(cfg))
    proc = subprocess.run(
        [sys.executable, "-m", "scotbed.broker", "--config", str(path), "--id", "b-a-0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "matching" in proc.stderr and "'fast'" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.slow
def test_link_capacity_set_at_runtime_builds_a_queue_and_marks_the_link_overloaded(tmp_path: Path) -> None:
    scot = topology.tree(topology.path(2))
    with _cluster(
        scot, tmp_path, "flooding", congestion={"window_ms": 100.0, "queue_threshold": 50}
    ) as cluster:

        async def scenario() -> None:
            async with BrokerClient(cluster.address("b-v0-0")) as c:
                await c.set_link_capacity(20.0, "b-v1-0")
                await c.publish([(f"p{k}", {"x": k}) for k in range(300)])
                await asyncio.sleep(0.5)
                link = (await c.status()).links[0]
                assert link.capacity_msgs_per_s == 20.0
                assert link.sent <= 20 * 0.5 * 2 + 2  # token bucket: about 20/s (+ one burst)
                assert link.output_len >= 250 and link.overloaded
                await c.set_link_capacity(0.0)
                await wait_quiescent(cluster.addresses(), timeout_s=20)
                link = (await c.status()).links[0]
                assert link.sent == 300 and link.output_len == 0 and link.capacity_msgs_per_s == 0

        asyncio.run(scenario())


def test_the_quiescence_barrier_waits_out_a_broker_too_busy_to_answer(tmp_path: Path) -> None:
    """A stopped broker's Status times out: the barrier keeps waiting (a saturated host is slow, not
    broken), returns once the broker answers again, and names the cause when its own deadline passes."""
    import signal

    from scotbed.broker.fleet import STATUS_TIMEOUT_S

    with _cluster(topology.tree(topology.path(2)), tmp_path, "rpf") as cluster:
        addrs = cluster.addresses()
        cluster.signal("b-v1-0", signal.SIGSTOP)
        try:
            with pytest.raises(TimeoutError, match="did not answer Status"):
                asyncio.run(wait_quiescent(addrs, timeout_s=1.0))

            async def resume_later() -> dict[str, pb.StatusReply]:
                waiting = asyncio.create_task(wait_quiescent(addrs, timeout_s=4 * STATUS_TIMEOUT_S))
                await asyncio.sleep(1.0)
                cluster.signal("b-v1-0", signal.SIGCONT)
                return await waiting

            replies = asyncio.run(resume_later())
        finally:
            cluster.signal("b-v1-0", signal.SIGCONT)
        assert set(replies) == {"b-v0-0", "b-v1-0"} and all(r.quiescent for r in replies.values())
