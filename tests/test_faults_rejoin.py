"""Rejoining: a killed and restarted broker gets its routing table back from its neighbours' sent logs."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from scotbed import contract, topology
from scotbed.broker.client import BrokerClient, SubscriptionStream
from scotbed.broker.launcher import LocalCluster
from scotbed.broker.rejoin import SentLog, replay_count
from scotbed.experiment.spec_faults import FaultSpec
from scotbed.filters import Filter
from scotbed.messages import Subscription, Unsubscription
from scotbed.orchestrator.faults import Injector
from scotbed.routing import ALGORITHMS, algorithm_class
from scotbed.v1 import scotbed_pb2 as pb

VICTIM = "b-v1-0"
FILTERS = {"s-low": "price > 10", "s-mid": "price > 20 and price < 60", "s-high": "price > 50"}
PRICES = [5, 15, 25, 55, 70]


def _sized(tag: str) -> tuple[pb.Envelope, int]:
    env = pb.Envelope()
    env.control.kind = tag
    return env, env.ByteSize()


def test_the_sent_log_cancels_a_subscription_and_its_unsubscription_and_keeps_the_order() -> None:
    f = Filter.parse("price > 1")
    log = SentLog()
    log.record(Subscription("a", f, "b1"), _sized("sub a"))
    log.record(Subscription("b", f, "b1"), _sized("sub b"))
    log.record(Subscription("c", f, "b2", packed=(Subscription("d", f, "b2"),)), _sized("packed c"))
    log.record(Unsubscription("a", "b1", filter=f), _sized("unsub a"))
    log.record(Unsubscription("c", "b2", filter=f), _sized("unsub c"))
    log.record(Subscription("a", f, "b1"), _sized("sub a again"))
    block = log.replay()
    assert replay_count(block[0][0]) == len(log) == 4
    assert [e.control.kind for e, _ in block[1:]] == ["sub b", "packed c", "unsub c", "sub a again"]
    assert all(size == e.ByteSize() for e, size in block)
    assert replay_count(_sized("hello")[0]) is None


def _overlay(routing: str, n: int) -> topology.Scot:
    """A path of ``n`` (clients at its ends); the clustered algorithms get two clusters of it."""
    return topology.Scot(topology.path(n), 2 if algorithm_class(routing).requires_clusters else 1)


Rows = set[tuple[object, ...]]
CASES = [(r, 3, (VICTIM,)) for r in ALGORITHMS] + [
    (r, 4, (VICTIM, "b-v2-0"))
    for r in ("rpf", "snr")  # the second is rebuilt from the first's rebuilt log
]


def _rows(table: pb.TableReply) -> set[tuple[object, ...]]:
    return {(e.sub_id, e.last_hop, e.cbv, e.state, e.host_broker, e.filter) for e in table.entries}


async def _all_links_up(cluster: LocalCluster, timeout_s: float = 30.0) -> None:
    """Every link connected both ways: each neighbour has seen the restarted broker's hello (and replays)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = await asyncio.to_thread(cluster.status_all)
        if all(link.connected for s in status.values() for link in s.links):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("links did not all come back")


@pytest.mark.slow
@pytest.mark.parametrize(("routing", "n", "victims"), CASES)
def test_a_restarted_broker_rebuilds_its_routing_table_and_routes_exactly(
    routing: str, n: int, victims: tuple[str, ...], tmp_path: Path
) -> None:
    scot = _overlay(routing, n)
    leaves = [b.id for b in scot.brokers if b.vertex in ("v0", f"v{n - 1}")]
    with LocalCluster.from_topology(
        scot,
        tmp_path,
        routing=routing,
        matching="counting",
        launcher={"stop_grace_s": 10.0},
        limits={"redial_initial_ms": 20.0, "redial_max_ms": 200.0},
    ) as c:

        async def scenario() -> tuple[list[Rows], list[Rows], dict[str, list[str]]]:
            clients = {b: BrokerClient(c.address(b)) for b in leaves}
            streams: dict[str, SubscriptionStream] = {}
            for k, (sid, text) in enumerate(FILTERS.items()):
                for host in leaves[k % 2 :: 2] or leaves:
                    streams[f"{sid}@{host}"] = await clients[host].subscribe(f"{sid}@{host}", text)
            await asyncio.to_thread(c.wait_quiescent)
            tables = await asyncio.to_thread(c.tables_all)
            before, after = [_rows(tables[v]) for v in victims], []
            for victim in victims:  # one after the other
                c.kill(victim)
                await asyncio.to_thread(c.start_broker, victim)
                await asyncio.to_thread(c.wait_ready, [victim])
                await _all_links_up(c)
                await asyncio.to_thread(c.wait_quiescent)
                after.append(_rows((await asyncio.to_thread(c.tables_all))[victim]))
            await clients[leaves[0]].publish([(f"p{p}", {"price": p}) for p in PRICES])
            await clients[leaves[-1]].publish([(f"q{p}", {"price": p}) for p in PRICES])
            await asyncio.to_thread(c.wait_quiescent)
            await asyncio.sleep(0.3)
            got = {name: sorted(s.pub_ids()) for name, s in streams.items()}
            for client in clients.values():
                await client.close()
            return before, after, got

        before, after, got = asyncio.run(scenario())
    assert after == before
    assert routing == "flooding" or all(before)
    for name, ids in got.items():
        flt = Filter.parse(FILTERS[name.split("@")[0]])
        want = sorted(f"{x}{p}" for x in "pq" for p in PRICES if flt.matches({"price": p}))
        assert ids == want, name


@pytest.mark.slow
def test_a_timeline_restart_is_done_when_the_links_are_up_both_ways(tmp_path: Path) -> None:
    scot = topology.tree(topology.path(3))
    rows = [
        {"at_s": 0.0, "action": "kill", "broker": VICTIM},
        {"at_s": 0.5, "action": "restart", "broker": VICTIM},
    ]
    with LocalCluster.from_topology(scot, tmp_path, routing="rpf", matching="counting") as c:
        injector = Injector([FaultSpec.model_validate(r) for r in rows], c, tmp_path)
        injector.start()
        deadline = time.monotonic() + 60
        log = tmp_path / contract.FAULTS
        while not log.exists() or len(log.read_text().splitlines()) < 2:
            assert time.monotonic() < deadline and injector.error is None, injector.error
            time.sleep(0.01)
        status = c.status_all()  # at once: the restart was recorded only once every link was back
        injector.stop()
    assert all(link.connected for s in status.values() for link in s.links)
    assert status[VICTIM].counters["replay_in"] == 0 and injector.down == set()


SUBS = 60  # subscriptions behind the victim: its replay is SUBS routing envelopes
SLOW_MSGS_PER_S = 20.0  # the replaying link's rate while the victim dies again: the replay takes 3 s


@pytest.mark.slow
def test_a_replay_cut_short_by_a_second_restart_starts_over_for_the_newest_process(tmp_path: Path) -> None:
    """The first replay is partly sent (some acknowledged, some in flight, the rest queued) when the
    victim dies again; the newest process gets exactly the newest replay, and nothing of the old one
    is handled as new routing (no sub_in at the victim, none re-flooded to its other neighbour)."""
    scot = topology.tree(topology.path(3))
    a, c_id = "b-v0-0", "b-v2-0"
    with LocalCluster.from_topology(
        scot,
        tmp_path,
        routing="rpf",
        matching="counting",
        launcher={"stop_grace_s": 10.0},
        limits={"redial_initial_ms": 20.0, "redial_max_ms": 200.0},
    ) as c:

        async def restart(victim: str) -> None:
            c.kill(victim)
            await asyncio.to_thread(c.start_broker, victim)
            await asyncio.to_thread(c.wait_ready, [victim])

        async def scenario() -> tuple[Rows, Rows, pb.StatusReply, int, int, list[list[str]]]:
            host, far = BrokerClient(c.address(a)), BrokerClient(c.address(c_id))
            streams = [await host.subscribe(f"s{k:02d}", f"price > {k}") for k in range(SUBS)]
            await asyncio.to_thread(c.wait_quiescent)
            before = _rows((await asyncio.to_thread(c.tables_all))[VICTIM])
            c_sub_in = (await far.status()).counters["sub_in"]
            await host.set_link_capacity(SLOW_MSGS_PER_S, VICTIM)
            await restart(VICTIM)
            deadline = time.monotonic() + 30
            while (await host.status()).counters["replay_out"] < SUBS:  # the first replay is queued
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            await asyncio.sleep(SUBS / SLOW_MSGS_PER_S / 3)  # a third of it sent
            await restart(VICTIM)
            await host.set_link_capacity(0.0, VICTIM)
            await _all_links_up(c)
            await asyncio.to_thread(c.wait_quiescent)
            after = _rows((await asyncio.to_thread(c.tables_all))[VICTIM])
            status = (await asyncio.to_thread(c.status_all))[VICTIM]
            c_sub_in_after = (await far.status()).counters["sub_in"]
            await far.publish([(f"q{p}", {"price": p}) for p in PRICES])
            await asyncio.to_thread(c.wait_quiescent)
            await asyncio.sleep(0.3)
            got = [sorted(s.pub_ids()) for s in streams]
            for client in (host, far):
                await client.close()
            return before, after, status, c_sub_in, c_sub_in_after, got

        before, after, status, c_sub_in, c_sub_in_after, got = asyncio.run(scenario())
    assert len(before) == SUBS and after == before
    assert (status.counters["replay_in"], status.counters["sub_in"]) == (SUBS, 0)
    assert c_sub_in_after == c_sub_in  # nothing re-flooded past the victim
    assert got == [sorted(f"q{p}" for p in PRICES if p > k) for k in range(SUBS)]
