"""Size limits, byte-bounded batches, undecodable requests and keepalive agreement, on real brokers."""

from __future__ import annotations

import asyncio
from collections import deque
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2

from scotbed import topology
from scotbed.broker.client import BrokerClient
from scotbed.broker.eventlog import read_events
from scotbed.broker.fleet import wait_quiescent
from scotbed.broker.launcher import LocalCluster
from scotbed.broker.limits import KEEPALIVE, Keepalive, check_publish, client_channel_options, server_options
from scotbed.broker.links import ENVELOPE_TAG_BYTES, _take
from scotbed.broker.runtime import Broker
from scotbed.config import ConfigError, LimitsConfig, LogConfig, build_configs
from scotbed.messages import Publication
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg

PATH2 = topology.tree(topology.path(2))
SERVICES = [pb.DESCRIPTOR.services_by_name[s] for s in ("Broker", "Link", "Admin")] + [
    health_pb2.DESCRIPTOR.services_by_name["Health"]
]


def _cluster(tmp_path: Path, **limits: int) -> LocalCluster:
    return LocalCluster.from_topology(
        PATH2, tmp_path, routing="flooding", matching="counting", limits=LimitsConfig(**limits)
    )


def test_batches_are_bounded_by_bytes_and_take_at_least_one_envelope() -> None:
    envs = [pb.Envelope(control=pb.Control(kind="x" * 100)) for _ in range(10)]
    size = envs[0].ByteSize() + ENVELOPE_TAG_BYTES
    q = deque((e, e.ByteSize()) for e in envs)  # the runtime queues each envelope with its size
    assert len(_take(q, 10, 3 * size)) == 3 and len(q) == 7
    assert len(_take(q, 2, 10 * size)) == 2 and len(q) == 5
    assert len(_take(q, 10, 1)) == 1 and len(q) == 4  # a lone envelope always goes (it was checked to fit)


def test_publish_request_size_is_the_encoded_size_to_the_byte() -> None:
    """The request size derived from its notifications' sizes refuses exactly one byte over the limit."""
    limits = LimitsConfig(max_message_bytes=4096)
    for pad in range(120, 140):  # notification sizes around the one-to-two-byte length prefix
        req = pb.PublishRequest()
        for k in range(20):
            req.notifications.add(pub_id=f"p{k}", publisher="x" * pad)
        at_limit = LimitsConfig(max_message_bytes=req.ByteSize())
        assert check_publish(req, at_limit) is None
        over = check_publish(req, LimitsConfig(max_message_bytes=req.ByteSize() - 1))
        assert over is not None and f"publish request bytes: {req.ByteSize()} exceeds" in over.text
    big = pb.PublishRequest()
    big.notifications.add(pub_id="p", publisher="x").attrs["s"].s = "y" * 70_000
    refusal = check_publish(big, LimitsConfig())
    assert refusal is not None and "notifications[0]: bytes" in refusal.text
    assert check_publish(big, limits) is not None


def test_limits_are_checked_with_the_field_named() -> None:
    with pytest.raises(ConfigError, match=r"limits\.max_filter_predicates: must be > 0"):
        LimitsConfig(max_filter_predicates=0).check()
    with pytest.raises(ConfigError, match=r"limits\.max_message_bytes: must be >= 2048"):
        LimitsConfig(max_message_bytes=1000).check()
    assert LimitsConfig(max_message_bytes=64 * 1024).batch_bytes == 63 * 1024


def test_an_envelope_larger_than_any_batch_is_dropped_with_a_drop_event(tmp_path: Path) -> None:
    async def scenario() -> None:
        scot = topology.tree(topology.path(3))
        cfg = build_configs(
            scot,
            {b.id: f"127.0.0.1:{k + 1}" for k, b in enumerate(scot.brokers)},
            routing="flooding",
            limits={"max_message_bytes": 4096},
            log=LogConfig(path=str(tmp_path / "events.jsonl")),
        )[1]
        b = Broker(cfg)
        b.handle(("b-v0-0", Publication("big", "pub", {"x": "y" * 5000}, hops=1), None))
        b.handle(("b-v0-0", Publication("small", "pub", {"x": "y"}, hops=1), None))
        assert [len(b.links[n].queue) for n in ("b-v0-0", "b-v2-0")] == [0, 1]
        assert b.counters["drop"] == 1 and b.links["b-v2-0"].dropped == 1
        b.events.close()
        drops = [e for e in read_events(tmp_path / "events.jsonl") if e["ev"] == "drop"]
        assert drops == [{**drops[0], "reason": "oversized", "pub_id": "big", "limit": 3072}]
        assert drops[0]["bytes"] > 5000

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_300000_predicate_subscription_is_refused_before_the_ack_and_links_stay_up(tmp_path: Path) -> None:
    huge = pb.SubscribeRequest(
        sub_id="huge",
        filter=pb.Filter(predicates=[pb.Predicate(attr=f"a{k}", op="exists") for k in range(300_000)]),
    )
    with _cluster(tmp_path) as cluster:

        async def scenario() -> None:
            a, b = cluster.address("b-v0-0"), cluster.address("b-v1-0")
            async with BrokerClient(a) as ca, BrokerClient(b) as cb:
                call = ca.broker.Subscribe(huge)
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await call.read()
                assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "300000 exceeds limits.max_filter_predicates = 256" in (err.value.details() or "")
                many_attrs = pb.PublishRequest(notifications=[pb.Notification(pub_id="p", publisher="x")])
                for k in range(300):
                    many_attrs.notifications[0].attrs[f"a{k}"].i = k
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await ca.broker.Publish(many_attrs)
                assert "limits.max_notification_attrs" in (err.value.details() or "")
                stream = await cb.subscribe("s1", "x > 0")
                await wait_quiescent(cluster.addresses(), timeout_s=30)
                assert await ca.publish([(f"p{k}", {"x": k + 1}) for k in range(20)]) == 20
                await wait_quiescent(cluster.addresses(), timeout_s=30)
                for _ in range(100):
                    if len(stream.received) >= 20:
                        break
                    await asyncio.sleep(0.02)
                assert sorted(stream.pub_ids()) == sorted(f"p{k}" for k in range(20))
                status = await ca.status()
                assert status.counters["rejected"] == 2 and status.counters["client_sub"] == 0
                assert all(link.connected for link in status.links)

        asyncio.run(scenario())
        for i in ("b-v0-0", "b-v1-0"):
            cluster.terminate(i)
    assert "WARNING" not in (tmp_path / "logs" / "b-v0-0.err").read_text()  # no link went down once up


async def _send_garbage(address: str, payload: bytes) -> list[tuple[str, grpc.StatusCode]]:
    out = []
    async with grpc.aio.insecure_channel(address) as ch:
        for service in SERVICES:
            for m in service.methods:
                path = f"/{service.full_name}/{m.name}"
                if m.client_streaming:
                    call = ch.stream_stream(path)()
                    await call.write(payload)
                    read = call.read()
                elif m.server_streaming:
                    read = ch.unary_stream(path)(payload).read()
                else:
                    read = ch.unary_unary(path)(payload)
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await asyncio.wait_for(read, 10)
                out.append((path, err.value.code()))
    return out


@pytest.mark.slow
def test_undecodable_bytes_on_every_rpc_are_refused_cleanly_and_counted(tmp_path: Path) -> None:
    with _cluster(tmp_path) as cluster:
        addr = cluster.address("b-v0-0")
        got = dict(asyncio.run(_send_garbage(addr, b"\xff\xff\xff\x0f\x01")))
        assert (
            got.pop("/grpc.health.v1.Health/List") == grpc.StatusCode.UNIMPLEMENTED
        )  # not served, not a crash
        assert set(got.values()) == {grpc.StatusCode.INVALID_ARGUMENT}, got
        # every RPC of the broker but Health/List, Admin.Relink and Admin.SetLinkLatency included
        assert cluster.status_all()["b-v0-0"].counters["rejected"] == len(got) == 13
        cluster.terminate("b-v0-0")
    err = (tmp_path / "logs" / "b-v0-0.err").read_text()
    assert "Traceback" not in err and "DecodeError" not in err


def test_servers_accept_the_pings_link_senders_send() -> None:
    srv, cli = dict(server_options(1 << 20)), dict(client_channel_options(1 << 20))
    assert cli["grpc.keepalive_time_ms"] >= srv["grpc.http2.min_ping_interval_without_data_ms"]
    assert cli["grpc.keepalive_permit_without_calls"] == srv["grpc.keepalive_permit_without_calls"] == 1
    assert KEEPALIVE.server_min_ping_interval_ms <= KEEPALIVE.time_ms


async def _idle_channel_states(
    ka: Keepalive, server_opts: list[tuple[str, object]], idle_s: float
) -> set[str]:
    """States of a link sender's channel, pinging every ``ka.time_ms``, idle (no call) after one call."""
    server = grpc.aio.server(options=server_opts)

    class Admin(pbg.AdminServicer):
        async def Status(self, request, context):  # type: ignore[no-untyped-def]
            return pb.StatusReply(broker_id="b")

    pbg.add_AdminServicer_to_server(Admin(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        opts = client_channel_options(1 << 20, ka)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=opts) as ch:
            await pbg.AdminStub(ch).Status(pb.StatusRequest())
            states = set()
            for _ in range(int(idle_s * 10)):
                await asyncio.sleep(0.1)
                states.add(ch.get_state().name)
            return states
    finally:
        await server.stop(None)


@pytest.mark.slow
def test_an_idle_channel_with_keepalive_pings_is_not_sent_away() -> None:
    ka = Keepalive(time_ms=200, timeout_ms=2000, server_min_ping_interval_ms=100)  # gRPC pings at most 1/s
    assert asyncio.run(_idle_channel_states(ka, server_options(1 << 20, ka), 5.0)) == {"READY"}
    # gRPC's server defaults (pings at most every 5 min): a too_many_pings GOAWAY takes the transport down
    assert "IDLE" in asyncio.run(_idle_channel_states(ka, [], 5.0))
