"""The Locust process's shared clients: one per broker, renewed once per lost session, all closed.

Each check runs in a process of its own: importing locust monkey-patches the process it runs in.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from scotbed import topology
from scotbed.broker.client import BrokerClient
from scotbed.broker.fleet import wait_quiescent
from scotbed.broker.launcher import LocalCluster

POOL = """
from locust.env import Environment
from scotbed.workloads.grpc_user import ClientPool

pool = ClientPool(Environment())
first = pool.get("127.0.0.1:1")
assert pool.get("127.0.0.1:1") is first and pool.get("127.0.0.1:2") is not first
fresh = pool.renew(first)
assert fresh is not first and pool.get("127.0.0.1:1") is fresh
assert pool.renew(first) is fresh  # a second user of the lost session gets the same fresh one
pool.close()
for c in (first, fresh):  # every channel the pool made is closed, the replaced one too
    try:
        c.channel.unary_unary("/x")(b"", timeout=1)
    except ValueError:
        continue
    raise AssertionError("a closed channel took a call")
"""

# More channels with a stream open than gevent's default threadpool has threads (10): every stream is
# acknowledged; while idle for IDLE_S its blocked read wakes about once (gRPC's own 0.1 s waits would
# wake it IDLE_S / 0.1 times); then each gets the one notification published, within the time limit.
CHANNELS = 12
IDLE_S = 1.0
MANY_CHANNELS = f"""
import sys
import gevent
from grpc import _common
from locust.env import Environment
from scotbed.filters import Filter
from scotbed.workloads.grpc_user import GrpcClient, init_gevent

init_gevent()
wakes = []
wait_once = _common._wait_once
_common._wait_once = lambda *args: wakes.append(1) or wait_once(*args)
env = Environment()
with gevent.Timeout(30, AssertionError("a Subscribe stream was not acknowledged")):
    opened = []
    for k in range({CHANNELS}):
        client = GrpcClient(sys.argv[1], env)  # a channel each, as users at as many brokers have
        opened.append((client, client.subscribe(f"s{{k}}", f"sub{{k}}", Filter.parse('symbol = "S"'))[0]))
readers = [gevent.spawn(lambda c, call: next(c.deliveries(call)), *o) for o in opened]
wakes.clear()
gevent.sleep({IDLE_S})
assert len(wakes) <= 2 * {CHANNELS}, f"{{len(wakes)}} wake-ups of {CHANNELS} idle streams in {IDLE_S} s"
print("subscribed", flush=True)
with gevent.Timeout(30, AssertionError("a stream did not get the notification")):
    got = gevent.joinall(readers)
assert all(g.successful() for g in got), [g.exception for g in got]
for client, call in opened:
    call.cancel()
    client.close()
"""


def _command(code: str) -> list[str]:
    return [sys.executable, "-c", "from gevent import monkey; monkey.patch_all()\n" + code]


def _run(code: str) -> None:
    subprocess.run(_command(code), check=True)


def test_one_client_per_broker_renewed_once_whoever_asks() -> None:
    _run(POOL)


def test_idle_streams_on_more_channels_than_gevents_default_threads_wait_quietly_and_all_receive(
    tmp_path: Path,
) -> None:
    scot = topology.tree(topology.path(1))
    with LocalCluster.from_topology(scot, tmp_path, routing="flooding") as cluster:
        ((bid, address),) = cluster.addresses().items()
        client = subprocess.Popen(
            [*_command(MANY_CHANNELS), address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert client.stdout is not None
        line = client.stdout.readline()
        assert line == "subscribed\n", client.communicate(timeout=30)[1][-3000:]
        asyncio.run(wait_quiescent({bid: address}, timeout_s=30))
        asyncio.run(_publish_one(address))
        _, err = client.communicate(timeout=60)
        assert client.returncode == 0, err[-3000:]


async def _publish_one(address: str) -> None:
    async with BrokerClient(address) as pub:
        await pub.publish([("p0", {"symbol": "S", "price": 1.0})])
