"""A subscription belongs to the client session that made it, on real broker processes.

Another connection's ``Unsubscribe`` finds nothing; a ``sub_id`` already active at another broker is
refused there; and one the accepting broker did not know of (covered, so never forwarded to it) is
dropped where the owner's subscription is known, and so is its later unsubscription: the victim keeps
its deliveries.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from scotbed import topology
from scotbed.broker.client import BrokerClient
from scotbed.broker.eventlog import read_events
from scotbed.broker.launcher import LocalCluster
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg

A, B, C = "b-v0-0", "b-v1-0", "b-v2-0"
FAST_LOG = {"sample_interval_ms": 100.0, "flush_interval_ms": 100.0}


def _own_connection(address: str) -> grpc.aio.Channel:
    """A channel on a connection of its own, as another client process has (channels of one process
    to one address otherwise share their connection)."""
    return grpc.aio.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])


def _cluster(tmp_path: Path, routing: str) -> LocalCluster:
    return LocalCluster.from_topology(
        topology.tree(topology.path(3)), tmp_path, routing=routing, matching="counting", log=FAST_LOG
    )


@pytest.mark.slow
def test_another_session_can_neither_unsubscribe_nor_take_over_a_subscription(tmp_path: Path) -> None:
    with _cluster(tmp_path, "rpf") as c:

        async def scenario() -> None:
            async with (
                BrokerClient(c.address(A)) as victim,
                _own_connection(c.address(A)) as other,
                BrokerClient(c.address(C)) as far,
            ):
                stream = await victim.subscribe("victim", "price > 0", "v")
                await asyncio.to_thread(c.wait_quiescent)
                request = pb.UnsubscribeRequest(sub_id="victim", subscriber="v")
                assert (await pbg.BrokerStub(other).Unsubscribe(request)).found is False
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await far.subscribe("victim", "price > 0", "attacker")
                assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS
                assert err.value.details() == f"subscription 'victim' is already active at broker {A}"
                await far.publish([("p1", {"price": 5})])
                assert (await stream.next(timeout=10)).notification.pub_id == "p1"
                assert await victim.unsubscribe("victim", "v") is True
                await asyncio.to_thread(c.wait_quiescent)
                tables = await asyncio.to_thread(c.tables_all)
                assert all(len(t.entries) == 0 for t in tables.values())

        asyncio.run(scenario())


@pytest.mark.slow
def test_a_reused_id_the_accepting_broker_did_not_know_cannot_cancel_the_owners_subscription(
    tmp_path: Path,
) -> None:
    """covering-active: ``victim`` is covered by ``root`` at A, so C never hears of it and accepts an
    attacker's ``victim``; A drops that subscription and, after the attacker leaves, its unsubscription."""
    with _cluster(tmp_path, "covering-active") as c:

        async def scenario() -> list[str]:
            async with BrokerClient(c.address(A)) as owner, BrokerClient(c.address(C)) as attacker:
                root = await owner.subscribe("root", "price > 0", "o")
                victim = await owner.subscribe("victim", "price > 5", "o")
                await asyncio.to_thread(c.wait_quiescent)
                taken = await attacker.subscribe("victim", "price > 100", "attacker")
                await asyncio.to_thread(c.wait_quiescent)
                await taken.close()
                await asyncio.to_thread(c.wait_quiescent)
                await attacker.publish([("p1", {"price": 10})])
                got = (await victim.next(timeout=10)).notification.pub_id
                assert (await root.next(timeout=10)).notification.pub_id == "p1"
                await asyncio.gather(root.close(), victim.close())
            await asyncio.to_thread(c.flush_all)
            return [got]

        assert asyncio.run(scenario()) == ["p1"]
        drops = [e for e in read_events(c.event_log(A)) if e["ev"] == "drop"]
    assert [(e["reason"], e["sub_id"], e["host"], e["owner"]) for e in drops] == [
        ("sub_id_in_use", "victim", C, A),
        ("sub_id_in_use", "victim", C, A),
    ]
