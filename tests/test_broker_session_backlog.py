"""A subscriber that never reads holds at most ``limits.max_session_backlog_bytes`` of its broker.

A real broker process; the subscriber opens its stream, reads the ack and nothing more, while a
publisher sends it 12,000 notifications of about 2 KB (24 MB). The subscriber's gRPC transport takes
up to its flow-control window (a few MB: gRPC widens it while the data flows, more for larger
messages) without its application reading; with a 256 KiB bound, the broker keeps what the bound
holds and drops the rest, each drop counted and logged with the bound; every notification is
delivered or dropped, none is both, the broker's memory hardly grows, and it stays up.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import psutil
import pytest

from scotbed import topology
from scotbed.broker.client import BrokerClient
from scotbed.broker.eventlog import read_events
from scotbed.broker.launcher import LocalCluster
from scotbed.filters import Filter
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg
from scotbed.wire import filter_to_pb

LIMIT = 256 * 1024
N = 12000
RSS_GROWTH_MAX = 16 << 20  # of the 24 MB published
PAD = "x" * 2000
FAST_LOG = {"sample_interval_ms": 100.0, "flush_interval_ms": 100.0}


@pytest.mark.slow
def test_a_subscriber_that_never_reads_is_bounded_in_bytes_and_the_rest_dropped(tmp_path: Path) -> None:
    scot = topology.tree(topology.path(1))
    limits = {"max_session_backlog_bytes": LIMIT}
    with LocalCluster.from_topology(scot, tmp_path, routing="rpf", limits=limits, log=FAST_LOG) as c:
        (broker,) = c.addresses()
        address = c.address(broker)
        proc = c.brokers[broker].proc
        assert proc is not None
        rss = psutil.Process(proc.pid).memory_info

        async def scenario() -> pb.StatusReply:
            async with (
                grpc.aio.insecure_channel(address) as channel,
                BrokerClient(address) as pub,
            ):
                req = pb.SubscribeRequest(sub_id="lazy", filter=filter_to_pb(Filter.parse("k >= 0")))
                call = pbg.BrokerStub(channel).Subscribe(req)
                assert (await call.read()).WhichOneof("event") == "ack"  # and nothing more is read
                before = rss().rss
                for start in range(0, N, 100):
                    await pub.publish([(f"p{k}", {"k": k, "pad": PAD}) for k in range(start, start + 100)])
                await asyncio.to_thread(c.wait_quiescent)
                assert rss().rss - before < RSS_GROWTH_MAX
                status = await pub.status()
                call.cancel()
                return status

        status = asyncio.run(scenario())
        c.flush_all()
        drops = [e for e in read_events(c.event_log(broker)) if e["ev"] == "drop"]
    delivered, dropped = status.counters["deliver"], status.counters["drop"]
    print(f"{delivered} delivered (queued or in gRPC buffers), {dropped} dropped")
    assert delivered + dropped == N and dropped == len(drops) > N // 2
    assert {(e["reason"], e["sub_id"], e["limit"]) for e in drops} == {("subscriber_overflow", "lazy", LIMIT)}
    assert all(e["queued_bytes"] <= LIMIT for e in drops)
