"""The limit of the broker's stack: a grpc.aio relay that forwards each batch as it came.

    python benchmarks/relay.py [--next HOST:PORT]

It speaks the broker's wire (``Broker.Publish``/``Subscribe``, ``Link.Connect``, ``Admin.Status``) with
nothing a broker does in between: no routing, no matching, no event log, no sequence bookkeeping or
resends. A ``Publish`` request becomes one batch; a batch that comes in on a link is acknowledged and
forwarded as it is on one outbound ``Link.Connect`` stream to ``--next``; without ``--next`` every
batch goes to every open ``Subscribe`` stream as one message of deliveries. ``Admin.Status`` counters:
``notif_in``, ``notif_out``, ``first_in_ns`` (the first notification received) and ``last_out_ns``
(the last one written), which give the relay's forwarding rate as the broker's event log gives the
broker's. Prints ``PORT <n>`` once it listens on 127.0.0.1 (port chosen by the system).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

# The brokers' gRPC I/O engine, chosen before gRPC loads.
from scotbed.broker import engine  # noqa: F401  # isort: skip
import grpc

from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg

UNLIMITED = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]


class Relay(pbg.BrokerServicer, pbg.LinkServicer, pbg.AdminServicer):
    def __init__(self, name: str) -> None:
        self.name = name
        self.outbound: asyncio.Queue[pb.Batch] = asyncio.Queue()
        self.subscribers: list[asyncio.Queue[pb.SubscribeEvent]] = []
        self.forwarding = False
        self.counters = {"notif_in": 0, "notif_out": 0, "first_in_ns": 0, "last_out_ns": 0}

    def _received(self, batch: pb.Batch) -> None:
        if not self.counters["first_in_ns"]:
            self.counters["first_in_ns"] = time.time_ns()
        self.counters["notif_in"] += len(batch.envelopes)
        if self.forwarding:
            self.outbound.put_nowait(batch)
            return
        ev = pb.SubscribeEvent()  # one stream message per batch, as a broker sends what it has queued
        ev.deliveries.items.extend(
            pb.Delivery(notification=e.notification.notification) for e in batch.envelopes
        )
        for q in self.subscribers:
            q.put_nowait(ev)
        self._sent(len(batch.envelopes))

    def _sent(self, n: int) -> None:
        self.counters["notif_out"] += n
        self.counters["last_out_ns"] = time.time_ns()

    async def Publish(self, request: pb.PublishRequest, context: Any) -> pb.PublishReply:
        envelopes = [
            pb.Envelope(notification=pb.NotificationMsg(notification=n)) for n in request.notifications
        ]
        self._received(pb.Batch(from_broker=self.name, envelopes=envelopes))
        return pb.PublishReply(accepted=len(envelopes))

    async def Subscribe(self, request: pb.SubscribeRequest, context: Any) -> AsyncIterator[pb.SubscribeEvent]:
        q: asyncio.Queue[pb.SubscribeEvent] = asyncio.Queue()
        self.subscribers.append(q)
        try:
            yield pb.SubscribeEvent(ack=pb.SubscribeAck(sub_id=request.sub_id, broker=self.name))
            while True:
                yield await q.get()
        finally:
            self.subscribers.remove(q)

    async def Connect(
        self, request_iterator: AsyncIterator[pb.Batch], context: Any
    ) -> AsyncIterator[pb.BatchAck]:
        async for batch in request_iterator:
            self._received(batch)
            yield pb.BatchAck(seq=batch.seq)

    async def Status(self, request: pb.StatusRequest, context: Any) -> pb.StatusReply:
        return pb.StatusReply(broker_id=self.name, counters=self.counters, quiescent=self.outbound.empty())

    async def forward(self, address: str) -> None:
        """One outbound link stream: each queued batch is written as it is; acknowledgements are read
        and discarded (the relay keeps nothing to resend)."""
        self.forwarding = True
        async with grpc.aio.insecure_channel(address, options=UNLIMITED) as channel:
            call = pbg.LinkStub(channel).Connect()

            async def discard_acks() -> None:
                while await call.read() is not grpc.aio.EOF:
                    pass

            acks = asyncio.create_task(discard_acks())
            try:
                seq = 0
                while True:
                    batch = await self.outbound.get()
                    seq += 1
                    batch.seq = seq
                    await call.write(batch)
                    self._sent(len(batch.envelopes))
            finally:
                acks.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await acks


async def serve(name: str, next_address: str | None) -> None:
    relay = Relay(name)
    server = grpc.aio.server(options=UNLIMITED)
    pbg.add_BrokerServicer_to_server(relay, server)
    pbg.add_LinkServicer_to_server(relay, server)
    pbg.add_AdminServicer_to_server(relay, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"PORT {port}", flush=True)
    if next_address is None:
        await server.wait_for_termination()
        return
    await relay.forward(next_address)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="relay")
    ap.add_argument("--next", dest="next_address", help="the next relay's HOST:PORT; none: the last relay")
    args = ap.parse_args()
    asyncio.run(serve(args.name, args.next_address))


if __name__ == "__main__":
    main()
