"""Run a scripted scenario (:mod:`scotbed.workloads.script`) against real brokers, from the host.

The driver is one asyncio loop in a thread of the calling process: it plays
the operations in file order with the broker client, and after every
subscribe, unsubscribe and publish (unless ``"settle": false``) and at every
``settle`` line waits for the run's quiescence barrier
(:func:`scotbed.broker.fleet.wait_quiescent`: every broker's queues empty,
every batch acknowledged, counters stable), so each operation's messages
are over before the next one starts and counts are exact.

It writes what a generated workload writes (docs/design.md §5), so the analysis and
the oracle need nothing special: ``events/script.jsonl`` (``subscribe``,
``unsubscribe``, ``publish``, ``receive``), ``workload/subscriptions.jsonl``
and ``workload/publications.jsonl``; and ``workload/script_ops.jsonl``, one
line per executed operation with its ``start_ns`` and ``end_ns`` (the end of
its settle; for the last line, of the script's final settle), so per-link
accounting can attribute every inter-broker message to the line that caused it.

Subscription streams stay open after the script ends: a closed stream is an
unsubscription, whose messages would land in the broker logs after the
script. :meth:`ScriptSession.stop` only detaches (the brokers stop later and
drop the sessions silently); :meth:`ScriptSession.close` cancels the streams.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from scotbed import contract
from scotbed.broker.client import BrokerClient, SubscriptionStream
from scotbed.broker.fleet import status_all, wait_quiescent
from scotbed.filters import Filter
from scotbed.workloads.records import JsonlWriter, ProcessRecords, merge_workload
from scotbed.workloads.script import PUBLISHER, Op, Script

PROCESS = "script"


class ScriptFailed(RuntimeError):
    """The script could not be played; the message names the line."""


@dataclass
class ScriptResult:
    ops: int
    events: dict[str, int] = field(default_factory=dict)  # client events by kind
    workload: dict[str, int] = field(default_factory=dict)  # lines of the workload files


class ScriptSession:
    """Plays one script; the subscriptions stay connected until :meth:`stop`.

    ``addresses``: broker id -> host:port this process reaches (client and Admin services share
    the port). ``on_poll`` sees every round of quiescence replies (a check that raises stops the
    script); ``on_op`` is told each operation before it runs.
    """

    def __init__(
        self,
        script: Script,
        addresses: Mapping[str, str],
        run_dir: str | Path,
        *,
        settle_timeout_s: float = 30.0,
        stable_s: float = 0.3,
        on_poll: Callable[[Mapping[str, Any]], None] | None = None,
        on_op: Callable[[Op], None] | None = None,
    ) -> None:
        self.script = script
        self.addresses = dict(addresses)
        self.run_dir = Path(run_dir)
        self.settle_timeout_s = settle_timeout_s
        self.stable_s = stable_s
        self.on_poll = on_poll
        self.on_op = on_op
        self.records = ProcessRecords(self.run_dir, PROCESS)
        self.ops_log = JsonlWriter(self.run_dir / contract.SCRIPT_OPS)
        self.streams: dict[str, SubscriptionStream] = {}
        self.events: dict[str, int] = {}
        self._clients: dict[str, BrokerClient] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # --- the thread that owns the event loop -------------------------------------------------

    def _call(self, coro: Any, timeout_s: float | None = None) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="scotbed-script", daemon=True)
            self._thread.start()
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return fut.result(timeout_s)
        except TimeoutError:
            fut.cancel()
            raise

    def run(self, timeout_s: float | None = None) -> ScriptResult:
        """Play every line, settle, wait for the last deliveries; write the workload files."""
        try:
            self._call(self._play(), timeout_s)
        except TimeoutError:
            raise ScriptFailed(f"the script did not end within {timeout_s} s") from None
        finally:
            self.records.flush()
            self.ops_log.flush()
        return ScriptResult(len(self.script.ops), dict(self.events), merge_workload(self.run_dir))

    def stop(self) -> None:
        """Detach from the subscriptions, leaving their streams open: the run calls this before it
        stops the brokers, and a stopping broker drops its sessions without unsubscribing, so the
        collected logs end with the script (closing a stream now would log an unsubscription)."""
        self.records.close()
        self.ops_log.close()

    def close(self) -> None:
        """Cancel the streams (the brokers that still run unsubscribe them), close the clients and
        stop the loop; safe to call twice."""
        if self._loop is None:
            return
        try:
            self._call(self._close(), 30.0)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(10.0)
            self._loop.close()
            self._loop = None
            self.stop()

    # --- playing ----------------------------------------------------------------------------

    def _client(self, broker: str) -> BrokerClient:
        if broker not in self._clients:
            self._clients[broker] = BrokerClient(self.addresses[broker])
        return self._clients[broker]

    def _count(self, ev: str) -> None:
        self.events[ev] = self.events.get(ev, 0) + 1

    async def _play(self) -> None:
        missing = sorted({o.broker for o in self.script.ops if o.broker} - set(self.addresses))
        if missing:
            raise ScriptFailed(f"no address for broker(s) {', '.join(missing)}")
        last: dict[str, Any] | None = None
        for op in self.script.ops:
            if self.on_op is not None:
                self.on_op(op)
            start = time.time_ns()
            try:
                await self._one(op)
                if op.settles:
                    await self._settle(op)
            except grpc.aio.AioRpcError as e:
                raise ScriptFailed(f"{op.describe()}: {e.code().name}: {e.details()}") from None
            except TimeoutError:
                raise ScriptFailed(f"{op.describe()}: the broker did not answer in time") from None
            if last is not None:
                self.ops_log.write(last)
            last = {"line": op.line, "op": op.op, "id": op.sub_id or op.pub_id, "broker": op.broker,
                    "start_ns": start, "end_ns": time.time_ns()}  # fmt: skip
        await self._settle(None)
        if last is not None:  # the script's final settle ends the last line's messages
            self.ops_log.write({**last, "end_ns": time.time_ns()})
        await self._await_deliveries()
        self._write_receives()

    async def _one(self, op: Op) -> None:
        if op.op == contract.SUBSCRIBE:
            assert op.filter is not None
            sent = time.time_ns()
            stream = await self._client(op.broker).subscribe(op.sub_id, op.filter, op.sub_id)
            self.streams[op.sub_id] = stream
            self.records.subscription(
                sent, op.op, op.sub_id, op.sub_id, op.broker, op.filter, ack_ns=stream.acked_ns
            )
        elif op.op == contract.UNSUBSCRIBE:
            sent = time.time_ns()
            if not await self._client(op.broker).unsubscribe(op.sub_id, op.sub_id):
                raise ScriptFailed(f"{op.describe()}: the broker does not know the subscription")
            # the broker ends the stream itself; its deliveries so far stay in ``received``
            self.records.subscription(
                sent, op.op, op.sub_id, op.sub_id, op.broker, self._filter_of(op.sub_id)
            )
        elif op.op == contract.PUBLISH:
            sent = time.time_ns()
            await self._client(op.broker).publish([(op.pub_id, op.attrs)], PUBLISHER, intended_ns=sent)
            self.records.publication(sent, sent, op.pub_id, PUBLISHER, op.broker, dict(op.attrs))
        elif op.op == "sleep":
            await asyncio.sleep(op.ms / 1000.0)
            return
        self._count(op.op)

    def _filter_of(self, sub_id: str) -> Filter:
        op = next(o for o in self.script.ops if o.op == contract.SUBSCRIBE and o.sub_id == sub_id)
        assert op.filter is not None
        return op.filter

    async def _settle(self, op: Op | None) -> None:
        try:
            await wait_quiescent(self.addresses, self.settle_timeout_s, self.stable_s, on_poll=self.on_poll)
        except TimeoutError as e:
            where = op.describe() if op is not None else "end of script"
            raise ScriptFailed(f"{where}: settle: {e}") from None

    async def _await_deliveries(self, timeout_s: float = 10.0) -> None:
        """Until the subscribers got every delivery the brokers counted (or ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            replies = await status_all(self.addresses)
            delivered = sum(r.counters["deliver"] for r in replies.values())
            if sum(len(s.received) for s in self.streams.values()) >= delivered:
                return
            await asyncio.sleep(0.05)

    def _write_receives(self) -> None:
        for sub_id, s in self.streams.items():
            if s.error is not None:
                raise ScriptFailed(
                    f"the stream of {sub_id} broke: {s.error.code().name}: {s.error.details()}"
                )
            for d, now in zip(s.received, s.received_ns, strict=True):
                self.records.receive(
                    now, sub_id, d.notification.pub_id, d.sub_id or sub_id, d.hops, d.broker_ns, s.broker
                )
                self._count(contract.RECEIVE)

    async def _close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.streams.values()), return_exceptions=True)
        await asyncio.gather(*(c.close() for c in self._clients.values()), return_exceptions=True)
        self._clients.clear()
