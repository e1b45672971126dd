"""The peer process's core: feeds RPCs to the state machine and sends what it returns.

``Send`` calls ``receive`` and queues the answer; one sender task per destination keeps each link
FIFO (as the simulator's queue is) and opens its channel on the first message, to peers of this run
only (the address map). A failed send (UNAVAILABLE, deadline) is the simulator's bounce:
``unreachable(dst, msg)``. Rounds come from the driver (``tick`` control calls, the simulator's
rounds) or, with ``period_ms``, from the process's own timer. With a ``capacity`` X a peer takes at
most X event messages per round and drops the rest, logged as ``ev_drop`` (the simulator's
capacity, paper §V-D); a dropped message is still acknowledged and counted as handled. Counters let
the driver tell when the whole run is quiescent: every message sent was handled and no queue holds
anything.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from typing import Any

import grpc

from scotbed import contract
from scotbed.broker.eventlog import EventLog
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg
from scotbed.vinifera import codec
from scotbed.vinifera.messages import EventMsg, Lookup, Msg
from scotbed.vinifera.peer import Peer

log = logging.getLogger("scotbed.vinifera.process")
SEND_TIMEOUT_S = 2.0


class PeerNode(pbg.PeerServicer):
    """One peer, its channels (opened on demand) and its event log."""

    def __init__(
        self,
        peer: Peer,
        run: str,
        addresses: dict[int, str],
        events: EventLog,
        capacity: int | None = None,
    ) -> None:
        self.peer, self.run, self.addresses, self.events = peer, run, addresses, events
        self.capacity = capacity
        self.now = 0
        #: event messages taken this round (the capacity's count)
        self.taken = 0
        self.sent = self.handled = self.bounced = self.refused = 0
        #: per peer: messages it acknowledged from us, and messages we handled from it (quiescence)
        self.sent_to: Counter[int] = Counter()
        self.handled_from: Counter[int] = Counter()
        #: per peer: sends that timed out (DEADLINE_EXCEEDED), which it may or may not have handled
        self.unsure_to: Counter[int] = Counter()
        self._queues: dict[int, asyncio.Queue[Msg]] = {}
        self._workers: dict[int, asyncio.Task[None]] = {}
        self._busy = 0
        self._channels: dict[int, grpc.aio.Channel] = {}
        self._links: tuple[int, ...] = ()

    # --- the state machine's inputs ---
    async def Send(self, request: pb.PeerMsg, context: grpc.aio.ServicerContext) -> pb.PeerAck:
        if request.run != self.run or request.dst != self.peer.name:
            self.refused += 1
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "not a peer of this run")
        msg = codec.decode(request.kind, json.loads(request.body))
        self.handled += 1
        self.handled_from[msg.src] += 1
        if isinstance(msg, EventMsg):
            self.taken += 1
            if self.capacity is not None and self.taken > self.capacity:
                self._log_event(contract.EV_DROP, msg)
                return pb.PeerAck()
        self._log_in(msg)
        self.dispatch(self.peer.receive(msg, self.now))
        return pb.PeerAck()

    def tick(self, now: int) -> None:
        """A new round: the capacity is taken afresh, then the state machine ticks."""
        self.now, self.taken = now, 0
        self.dispatch(self.peer.tick(now))

    def dispatch(self, out: list[Msg]) -> None:
        """Queue what the state machine returned, log deliveries and view changes."""
        for msg in out:
            self._log_out(msg)
            if msg.dst not in self._queues:
                self._queues[msg.dst] = asyncio.Queue()
                self._workers[msg.dst] = asyncio.create_task(self._sender(msg.dst))
            self._queues[msg.dst].put_nowait(msg)
        for eid, hops, tree_hops in self.peer.deliveries:
            self.events.emit(contract.DELIVER, pub_id=eid, hops=hops, tree_hops=tree_hops)
        self.peer.deliveries.clear()
        links = tuple(d.name for d in self.peer.links())
        if links != self._links:
            self._links = links
            pred, succ = self.peer.pred, self.peer.succ
            self.events.emit(
                contract.VIEW,
                id=self.peer.id,
                pred=pred.name if pred else None,
                succ=succ.name if succ else None,
                links=list(links),
            )

    async def _sender(self, dst: int) -> None:
        queue = self._queues[dst]
        while True:
            msg = await queue.get()
            self._busy += 1
            try:
                await self._send_one(msg)
            finally:
                self._busy -= 1
                queue.task_done()

    async def _send_one(self, msg: Msg) -> None:
        addr = self.addresses.get(msg.dst)
        if addr is not None:
            if msg.dst not in self._channels:
                self._channels[msg.dst] = grpc.aio.insecure_channel(addr)
            kind, body = codec.encode(msg)
            req = pb.PeerMsg(
                run=self.run, src=msg.src, dst=msg.dst, kind=kind, body=json.dumps(body).encode()
            )
            try:
                await pbg.PeerStub(self._channels[msg.dst]).Send(req, timeout=SEND_TIMEOUT_S)
                self.sent += 1
                self.sent_to[msg.dst] += 1
                return
            except grpc.aio.AioRpcError as e:
                log.info("peer %s: send to %s failed: %s", self.peer.name, msg.dst, e.code())
                if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    self.unsure_to[msg.dst] += 1
        self.bounced += 1
        self.dispatch(self.peer.unreachable(msg.dst, msg))

    def _log_event(self, ev: str, msg: EventMsg) -> None:
        self.events.emit(
            ev, pub_id=msg.eid, src=msg.src, attr=msg.attr, phase=msg.phase, hops=msg.hops, round=self.now
        )

    def _log_in(self, msg: Msg) -> None:
        if isinstance(msg, EventMsg):
            self._log_event(contract.EV_IN, msg)
        elif isinstance(msg, Lookup):
            self.events.emit(contract.LOOKUP_IN, src=msg.src, owner=msg.owner, attr=msg.attr, iv=list(msg.iv))

    def _log_out(self, msg: Msg) -> None:
        if isinstance(msg, EventMsg):
            self.events.emit(
                contract.EV_OUT, pub_id=msg.eid, dst=msg.dst, attr=msg.attr, phase=msg.phase, hops=msg.hops
            )
        elif isinstance(msg, Lookup):
            self.events.emit(
                contract.LOOKUP_OUT, dst=msg.dst, owner=msg.owner, attr=msg.attr, iv=list(msg.iv)
            )

    # --- the driver's side ---
    async def Control(self, request: pb.PeerCall, context: grpc.aio.ServicerContext) -> pb.PeerReply:
        args = json.loads(request.body or b"{}")
        try:
            reply = self.control(request.op, args)
        except (KeyError, ValueError) as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{request.op}: {e}")
        return pb.PeerReply(body=json.dumps(reply).encode())

    def control(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        p = self.peer
        if op == "tick":
            self.tick(int(args["now"]))
        elif op == "subscribe":
            self.dispatch(p.subscribe(self.now))
        elif op == "publish":
            eid, event = int(args["eid"]), codec.event_in(args["event"])
            self.events.emit(contract.PUBLISH, pub_id=eid, values=args["event"], round=self.now)
            self.dispatch(p.publish(eid, event, self.now))
        elif op == "bootstrap":
            p.bootstrap([codec.desc_in(d) for d in args["contacts"]])
            self.dispatch([])
        elif op == "wire":
            p.succs, p.preds = (
                [codec.desc_in(d) for d in args["succs"]],
                [codec.desc_in(d) for d in args["preds"]],
            )
            p.friend_links = [codec.desc_in(d) for d in args.get("friends", [])]
            p.sw_links = [codec.desc_in(d) for d in args.get("sw", [])]
            p.primary = args.get("primary")
            self.dispatch([])
        elif op == "flush":
            self.events.flush()
        elif op != "state":
            raise ValueError(f"unknown op {op!r}")
        return self.state()

    def state(self) -> dict[str, Any]:
        p = self.peer
        return {
            "name": p.name,
            "id": p.id,
            "pred": p.pred.name if p.pred else None,
            "succ": p.succ.name if p.succ else None,
            "links": [d.name for d in p.links()],
            "delivered": len(p.delivered),
            "duplicates": p.duplicates,
            "load": p.load,
            "sent": self.sent,
            "handled": self.handled,
            "bounced": self.bounced,
            "refused": self.refused,
            "sent_to": {str(k): v for k, v in self.sent_to.items()},
            "handled_from": {str(k): v for k, v in self.handled_from.items()},
            "unsure_to": {str(k): v for k, v in self.unsure_to.items()},
            "queued": self._busy + sum(q.qsize() for q in self._queues.values()),
        }

    async def round_timer(self, period_ms: int) -> None:
        """Own rounds, for runs without a driver pacing them."""
        while True:
            await asyncio.sleep(period_ms / 1000)
            self.tick(self.now + 1)

    async def close(self) -> None:
        for t in self._workers.values():
            t.cancel()
        await asyncio.gather(*self._workers.values(), return_exceptions=True)
        for ch in self._channels.values():
            await ch.close()
        self.events.close()
