"""The run token on real broker processes: Admin (but Status) and Link.Connect refuse a caller without it.

Plaintext brokers of one run (same run id, which is no secret): the links between them, which show
the token, deliver; a client without the token, or with another, cannot reconfigure a broker, read
its table, or pose as a neighbour (a forged hello is refused before any batch is read).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from scotbed import topology
from scotbed.broker import runtoken
from scotbed.broker.client import BrokerClient
from scotbed.broker.fleet import wait_quiescent
from scotbed.broker.launcher import LocalCluster
from scotbed.broker.runtime import Broker
from scotbed.config import build_configs
from scotbed.v1 import scotbed_pb2_grpc as pbg

A, B = "b-v0-0", "b-v1-0"
TOKEN = "a-test-run-token"
RUN = "run-1"

CALLS: dict[str, Callable[[BrokerClient], Awaitable[Any]]] = {
    "Admin.SetLinkLatency": lambda cl: cl.set_link_latency(5.0, 0.0, B),
    "Admin.SetLinkCapacity": lambda cl: cl.set_link_capacity(1.0, B),
    "Admin.Relink": lambda cl: cl.relink([], [B]),
    "Admin.RoutingTable": lambda cl: cl.table(),
    "Admin.Flush": lambda cl: cl.flush(),
    "Admin.Drain": lambda cl: cl.drain(1.0),
}


async def _forge_link(address: str) -> tuple[grpc.StatusCode, str]:
    """The status of a link stream opened without the run token. The broker refuses it on the call's
    metadata, before it reads anything, so the stream is read without a write first: a hello written
    while the refusal arrives fails on the client's side with an error of its own (INTERNAL)."""
    async with grpc.aio.insecure_channel(address) as channel:
        call = pbg.LinkStub(channel).Connect()
        try:
            await asyncio.wait_for(call.read(), timeout=30)
        except grpc.aio.AioRpcError as e:
            return e.code(), str(e.details())
    raise AssertionError("a link stream without the run token was not refused")


@pytest.mark.slow
def test_admin_and_link_calls_without_the_run_token_are_refused_and_links_with_it_deliver(
    tmp_path: Path,
) -> None:
    scot = topology.tree(topology.path(2))
    with LocalCluster.from_topology(
        scot, tmp_path, routing="rpf", matching="counting", run_id=RUN, run_token=TOKEN
    ) as c:

        async def scenario() -> tuple[dict[str, tuple[str, str]], str]:
            refused = {}
            async with (
                BrokerClient(c.address(A), run_token="") as anon,
                BrokerClient(c.address(A), run_token="wrong") as wrong,
            ):
                for name, call in CALLS.items():
                    for cl in (anon, wrong):
                        with pytest.raises(grpc.aio.AioRpcError) as err:
                            await call(cl)
                        refused[name] = (err.value.code().name, str(err.value.details()))
                assert (await anon.status()).broker_id == A  # Status stays open
            forged = await _forge_link(c.address(B))
            async with (
                BrokerClient(c.address(B), run_token=TOKEN) as sc,
                BrokerClient(c.address(A), run_token=TOKEN) as pc,
            ):
                stream = await sc.subscribe("s", "price > 0")
                await wait_quiescent(c.addresses(), timeout_s=30)
                await pc.publish([("p1", {"price": 1})])
                got = (await stream.next(timeout=10)).notification.pub_id
                assert got == "p1" and [e.sub_id for e in (await sc.table()).entries] == ["s"]
                assert (await pc.status()).counters["refused"] == 2 * len(CALLS)
                await stream.close()
            assert forged[0] == grpc.StatusCode.PERMISSION_DENIED
            return refused, forged[1]

        refused, forged = asyncio.run(scenario())
    assert refused == {
        name: (
            "PERMISSION_DENIED",
            f"{name} on broker {A}: the run token ({runtoken.KEY} metadata) is missing or wrong",
        )
        for name in CALLS
    }
    assert (
        forged == f"Link.Connect on broker {B}: the run token ({runtoken.KEY} metadata) is missing or wrong"
    )


def test_a_broker_without_a_token_checks_nothing_and_the_token_is_no_run_id() -> None:
    (cfg,) = build_configs(topology.tree(topology.path(1)), {"b-v0-0": "127.0.0.1:0"})
    assert cfg.run_token == "" and runtoken.metadata("") == ()
    assert runtoken.metadata(TOKEN) == ((runtoken.KEY, TOKEN),)
    assert runtoken.new() != runtoken.new() and len(runtoken.new()) >= 40

    async def scenario() -> None:
        broker = Broker(cfg)
        assert broker.cfg.run_token == ""

    asyncio.run(scenario())
