"""Exactly once across link resets: a link to a surviving broker torn down again and again mid-flow.

The link from the publishers' broker to the next one runs through a TCP relay in the test. A reset
asked of the relay aborts every connection it carries (an RST, as a failing network gives) at the
moment the receiver next answers, and that answer (the ack of a batch the receiver took) dies with
the connection: the sender must resend the batch and the receiver drop it. Both brokers survive;
every notification must still arrive exactly once.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from scotbed import topology
from scotbed.broker.client import BrokerClient
from scotbed.broker.launcher import LocalCluster
from scotbed.config import dump_all

SENDER, RECEIVER, FAR = "b-v0-0", "b-v1-0", "b-v2-0"
PUBLICATIONS = 600


class Relay:
    """A TCP relay to ``target`` on its own event loop.

    :meth:`reset` arms a reset: the next bytes the target sends back (an ack) are not forwarded;
    instead every connection is aborted, so a batch the target took is never acked.
    """

    def __init__(self, target: str) -> None:
        self.host, port = target.rsplit(":", 1)
        self.port = int(port)
        self.loop = asyncio.new_event_loop()
        self.transports: set[asyncio.WriteTransport] = set()
        self.armed = False
        self.resets = 0
        started = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(started,), daemon=True)
        self.thread.start()
        started.wait(10)

    def _serve(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._pipe, "127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        started.set()
        self.loop.run_forever()

    async def _pipe(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            ur, uw = await asyncio.open_connection(self.host, self.port)
        except OSError:
            w.transport.abort()
            return
        self.transports |= {w.transport, uw.transport}

        async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter, answers: bool) -> None:
            try:
                while data := await src.read(65536):
                    if answers and self.armed:
                        self.armed = False
                        self._abort_all()
                        return
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.transport.abort()

        await asyncio.gather(copy(r, uw, answers=False), copy(ur, w, answers=True))
        self.transports -= {w.transport, uw.transport}

    def _abort_all(self) -> None:
        for t in list(self.transports):
            t.abort()
        self.resets += bool(self.transports)
        self.transports.clear()

    def reset(self) -> None:
        def arm() -> None:
            self.armed = True

        self.loop.call_soon_threadsafe(arm)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self._abort_all)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@contextmanager
def relayed(c: LocalCluster) -> Iterator[Relay]:
    """Restart SENDER with its link to RECEIVER dialled through a relay (before any subscription)."""
    relay = Relay(c.address(RECEIVER))
    c.configs = [
        replace(
            cfg,
            neighbours=tuple(
                replace(n, address=relay.address) if n.id == RECEIVER else n for n in cfg.neighbours
            ),
        )
        if cfg.id == SENDER
        else cfg
        for cfg in c.configs
    ]
    c.config_path.write_text(json.dumps(dump_all(c.configs), indent=1))
    c.kill(SENDER)
    c.start_broker(SENDER)
    c.wait_ready([SENDER])
    try:
        yield relay
    finally:
        relay.close()


@pytest.mark.slow
@pytest.mark.parametrize("routing", ["rpf", "covering-active"])
def test_every_notification_arrives_once_across_link_resets_to_a_surviving_broker(
    routing: str, tmp_path: Path
) -> None:
    scot = topology.tree(topology.path(3))
    with (
        LocalCluster.from_topology(
            scot,
            tmp_path,
            routing=routing,
            matching="counting",
            limits={"redial_initial_ms": 5.0, "redial_max_ms": 20.0},
        ) as c,
        relayed(c) as relay,
    ):

        async def scenario() -> tuple[dict[str, list[str]], dict[str, int]]:
            pub, sub = BrokerClient(c.address(SENDER)), BrokerClient(c.address(FAR))
            streams = {
                "all": await sub.subscribe("all", "x >= 0"),
                "half": await sub.subscribe("half", "x >= 300"),
            }
            await asyncio.to_thread(c.wait_quiescent)
            for k in range(0, PUBLICATIONS, 10):
                await pub.publish([(f"p{i}", {"x": i}) for i in range(k, k + 10)])
                await asyncio.sleep(0.005)
                if k % 30 == 0:
                    relay.reset()
            deadline = time.monotonic() + 60
            while not all(
                link.connected for s in (await asyncio.to_thread(c.status_all)).values() for link in s.links
            ):
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            await asyncio.to_thread(c.wait_quiescent)
            await asyncio.sleep(0.3)
            got = {name: sorted(s.pub_ids()) for name, s in streams.items()}
            counters = dict((await asyncio.to_thread(c.status_all))[RECEIVER].counters)
            for client in (pub, sub):
                await client.close()
            return got, counters

        got, counters = asyncio.run(scenario())
    assert relay.resets >= 10
    assert got["all"] == sorted(f"p{i}" for i in range(PUBLICATIONS))
    assert got["half"] == sorted(f"p{i}" for i in range(300, PUBLICATIONS))
    assert counters.get("duplicate_batches", 0) > 0  # acks died with the connections: batches were resent
    print(f"{routing}: {relay.resets} resets, {counters['duplicate_batches']} resent batches dropped")
