"""Locust users that play a workload plan: subscribers (with churn) and open-loop publishers (and HRPs).

Only Locust processes import this module (it needs gevent); the orchestrator
uses :mod:`scotbed.workloads.runner`.

Who plays which client: each user claims the next subscriber or publisher
of the plan from the master (a ``scotbed_claim`` message answered by
``scotbed_claimed``), so any distribution of users over workers plays every
client exactly once; ids come from the plan, not from the claim order.

The run's phases: :mod:`scotbed.workloads.coordinator`. Sessions lost to the fault timeline:
:class:`ScotbedUser`.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gevent
import grpc
from gevent.event import AsyncResult, Event
from locust import constant, events, task
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from scotbed import contract
from scotbed.broker.looplag import LoopProbe
from scotbed.config import LogConfig
from scotbed.filters import Filter
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.wire import notification_to_pb
from scotbed.workloads.coordinator import Coordinator
from scotbed.workloads.entry import PLAN_ENV, RUN_DIR_ENV
from scotbed.workloads.grpc_user import GrpcClient, GrpcUser
from scotbed.workloads.plan import SESSION_RETRY_S, Action, Plan
from scotbed.workloads.plan_json import load
from scotbed.workloads.quotes import QuoteSource
from scotbed.workloads.records import ProcessRecords
from scotbed.workloads.schema import Quote

CLAIM, CLAIMED, REPORT, RELEASE = "scotbed_claim", "scotbed_claimed", "scotbed_report", "scotbed_release"
FLUSH_INTERVAL_S = 0.2
CLIENT_SAMPLE_S = LogConfig.sample_interval_ms / 1000.0  # the brokers' default `loop` period, so both compare

log = logging.getLogger("scotbed.workloads")


class SessionLost(RuntimeError):
    """A client's session whose broker did not serve again within its outage."""


def plan_from_env() -> tuple[Plan, Path]:
    path = os.environ.get(PLAN_ENV)
    if not path:
        raise RuntimeError(f"set {PLAN_ENV} to the workload plan (JSON) this locustfile plays")
    return load(path), Path(os.environ.get(RUN_DIR_ENV, "."))


class Context:
    """Per-process state of a worker (or of a local run): plan, records, claims, release instant."""

    def __init__(self, environment: Environment, plan: Plan, run_dir: Path) -> None:
        self.env = environment
        self.plan = plan
        self.run_dir = run_dir
        self.released: AsyncResult = AsyncResult()
        self.coordinator: Coordinator | None = None  # set in a local (single-process) run
        self._records: ProcessRecords | None = None
        self._claims: dict[int, AsyncResult] = {}
        self._seq = itertools.count()
        self._sources: dict[str, QuoteSource] | None = None

    @property
    def records(self) -> ProcessRecords:
        if self._records is None:
            runner = self.env.runner
            index = runner.worker_index if isinstance(runner, WorkerRunner) else 0
            worker = f"w{index}" if isinstance(runner, WorkerRunner) else "local"
            name = f"{contract.CLIENT_PROCESS_PREFIX}{worker}"
            self._records = ProcessRecords(self.run_dir, name)
        return self._records

    def source(self, publisher: str) -> QuoteSource:
        if self._sources is None:
            self._sources = self.plan.sources()
        return self._sources[publisher]

    def claim(self, role: str, timeout_s: float = 60.0) -> int:
        if self.coordinator is not None:
            return self.coordinator.allocate(role)
        req = next(self._seq)
        result: AsyncResult = AsyncResult()
        self._claims[req] = result
        assert self.env.runner is not None
        self.env.runner.send_message(CLAIM, {"role": role, "req": req})
        index: int = result.get(timeout=timeout_s)
        return index

    def on_claimed(self, data: dict[str, Any]) -> None:
        self._claims.pop(int(data["req"])).set(int(data["index"]))

    def report(self, kind: str, **data: Any) -> None:
        self.records.flush()
        if self.coordinator is not None:
            self.coordinator.report(kind, data)
        else:
            assert self.env.runner is not None
            self.env.runner.send_message(REPORT, {"kind": kind, **data})

    def flush_forever(self) -> None:
        """Flush the records and report the deliveries read since the last round (the drain waits until
        the subscribers have read what the brokers delivered)."""
        reported = 0
        while True:
            gevent.sleep(FLUSH_INTERVAL_S)
            if self._records is not None:
                self._records.flush()
                if self._records.receives > reported:
                    n, reported = self._records.receives - reported, self._records.receives
                    self.report("received", n=n)

    def probe_forever(self, probe: LoopProbe) -> None:
        """Measure how late this process's gevent loop wakes (and its CPU share) and log it as a
        ``client_loop`` event every ``CLIENT_SAMPLE_S``: the brokers' ``loop`` probe, on the client side."""
        due = time.monotonic() + CLIENT_SAMPLE_S
        while True:
            asked = time.monotonic()
            gevent.sleep(probe.period_s)
            now = time.monotonic()
            probe.record(now - asked - probe.period_s)
            if now >= due:
                due = now + CLIENT_SAMPLE_S
                rec = self.records
                rec.event(time.time_ns(), rec.process, contract.CLIENT_LOOP, **probe.take())

    def close(self) -> None:
        if self._records is not None:
            self._records.close()


_context: Context | None = None


def context() -> Context:
    if _context is None:
        raise RuntimeError("the scotbed workload context is not set up (is this a Locust process?)")
    return _context


def setup(environment: Environment) -> None:
    """Wire the plan into this Locust process: master coordinator, worker context, or both (local)."""
    global _context
    plan, run_dir = plan_from_env()
    runner = environment.runner
    if isinstance(runner, MasterRunner):
        coord = Coordinator(environment, plan, run_dir)
        coord.deliver_release = lambda t0: runner.send_message(RELEASE, {"t0_ns": t0})

        def on_claim(environment: Environment, msg: Any, **_: Any) -> None:
            idx = coord.allocate(msg.data["role"])
            runner.send_message(CLAIMED, {"req": msg.data["req"], "index": idx}, client_id=msg.node_id)

        def on_report(environment: Environment, msg: Any, **_: Any) -> None:
            data = dict(msg.data)
            coord.report(data.pop("kind"), data)

        runner.register_message(CLAIM, on_claim)
        runner.register_message(REPORT, on_report)
        environment.events.test_start.add_listener(lambda **_: coord.start())
        return
    ctx = Context(environment, plan, run_dir)
    _context = ctx
    if isinstance(runner, WorkerRunner):
        runner.register_message(CLAIMED, lambda environment, msg, **_: ctx.on_claimed(msg.data))
        runner.register_message(
            RELEASE, lambda environment, msg, **_: ctx.released.set(int(msg.data["t0_ns"]))
        )
    else:
        coord = Coordinator(environment, plan, run_dir)
        coord.deliver_release = ctx.released.set
        ctx.coordinator = coord
        environment.events.test_start.add_listener(lambda **_: coord.start())
    gevent.spawn(ctx.flush_forever)
    gevent.spawn(ctx.probe_forever, LoopProbe())
    environment.events.test_stop.add_listener(lambda **_: ctx.records.flush())
    environment.events.quitting.add_listener(lambda **_: ctx.close())


def sleep_until(t_ns: int) -> None:
    while (left := t_ns - time.time_ns()) > 0:
        gevent.sleep(left / 1e9)


class ScotbedUser(GrpcUser):
    """A user that plays one plan client once, then idles until the run ends.

    Sessions. A client whose call or stream fails while the fault timeline has its broker down on
    purpose (an outage of the plan's broker) has lost its session: it logs a ``session`` event
    (``lost``), waits until the broker serves again (a fresh channel, probed every
    :data:`SESSION_RETRY_S`) and opens the session again (``restored``). Past the outage's end it
    fails, naming the broker; a failure outside every outage fails the workload as before.
    """

    abstract = True
    wait_time = constant(1)

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.finished = False
        self.client_name = ""

    def fail(self, message: str) -> None:
        log.error("%s: %s", self.client_name or type(self).__name__, message)
        context().report("failed", message=f"{self.client_name}: {message}")
        self.finished = True

    def outage_end_ns(self, broker: str) -> int | None:
        """When the outage ``broker`` is in now ends (wall clock, ns); None outside every outage."""
        ctx = context()
        if not ctx.released.ready():
            return None
        t0 = ctx.released.get()
        until = ctx.plan.broker(broker).outage_until((time.time_ns() - t0) / 1e9)
        return None if until is None else t0 + int(until * 1e9)

    def session_event(self, state: str, broker: str, **fields: Any) -> None:
        rec = context().records
        rec.event(time.time_ns(), self.client_name, contract.SESSION, state=state, broker=broker, **fields)

    def reopen(self, broker: str, until_ns: int) -> GrpcClient:
        """A client of ``broker`` once it serves again, on a fresh channel after each probe that failed;
        :class:`SessionLost` past ``until_ns``."""
        client = self.client_for(context().plan.broker(broker).address)
        while not client.serving():
            if time.time_ns() >= until_ns:
                raise SessionLost(f"{broker} did not serve again by the end of its outage")
            gevent.sleep(SESSION_RETRY_S)
            client = self.renew_client(client)
        return client

    @task
    def play(self) -> None:
        if self.finished:
            return
        self.finished = True
        self.run_client()

    def run_client(self) -> None:
        raise NotImplementedError


class Subscriber(ScotbedUser):
    """Holds one Subscribe stream per subscription, logs receives, and runs its churn actions.

    A lost session (:class:`ScotbedUser`) opens every stream it held at that broker again, with the
    same sub_ids and filters: the subscriptions go on, so no ``subscribe`` is logged for them, and the
    deliveries they missed meanwhile fall inside the fault window. A churn action waits for a session
    being opened again, and one whose call the outage broke runs again once it is.
    """

    fixed_count = 0  # set by configure() from the plan
    abstract = False

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.streams: dict[str, tuple[GrpcClient, Any, Filter, str]] = {}
        self.reopening: dict[str, Event] = {}  # broker -> set once its lost session is open again
        self.stopping = False

    def run_client(self) -> None:
        ctx = context()
        idx = ctx.claim("subscriber")
        if idx < 0:
            return
        sp = ctx.plan.subscribers[idx]
        self.client_name = sp.name
        try:
            for sub_id, flt in sp.subscriptions:
                self.subscribe(sub_id, flt, sp.broker)
        except (grpc.RpcError, RuntimeError) as e:
            self.fail(f"subscribe at {sp.broker}: {_describe(e)}")
            return
        ctx.report("subscribed", n=len(sp.subscriptions))
        t0 = ctx.released.get()
        try:
            for a in sp.actions:
                sleep_until(t0 + int(a.at_s * 1e9))
                self.act(a)
        except (grpc.RpcError, RuntimeError) as e:
            self.fail(f"churn action: {_describe(e)}")
            return
        ctx.report("subscriber_done")

    def act(self, a: Action) -> None:
        """One churn action; again once the session is open when an outage of its broker broke it."""
        broker = a.broker if a.op == "subscribe" else self.streams[a.sub_id][3]
        for again in (False, True):
            if (reopened := self.reopening.get(broker)) is not None:
                reopened.wait()
            try:
                if a.op == "subscribe":
                    assert a.filter is not None
                    self.subscribe(a.sub_id, a.filter, a.broker)
                else:
                    self.unsubscribe(a.sub_id)
                return
            except grpc.RpcError as e:
                if again or self.outage_end_ns(broker) is None:
                    raise
                self.lost(broker, f"{a.op} {a.sub_id}: {_describe(e)}")

    def subscribe(self, sub_id: str, flt: Filter, broker: str) -> None:
        ctx = context()
        sent = time.time_ns()
        ack = self.open(self.client_for(ctx.plan.broker(broker).address), sub_id, flt, broker)
        ctx.records.subscription(
            sent, contract.SUBSCRIBE, sub_id, self.client_name, broker, flt, ack_ns=ack.ts_ns
        )

    def open(self, client: GrpcClient, sub_id: str, flt: Filter, broker: str) -> pb.SubscribeAck:
        """Open the stream of ``sub_id`` and read it in a greenlet of its own."""
        call, ack = client.subscribe(sub_id, self.client_name, flt)
        self.streams[sub_id] = (client, call, flt, broker)
        gevent.spawn(self._receive, client, call, sub_id, broker)
        return ack

    def _receive(self, client: GrpcClient, call: Any, sub_id: str, broker: str) -> None:
        rec = context().records
        why = "ended by the broker"
        try:
            for d, now in client.deliveries(call):
                rec.receive(
                    now,
                    self.client_name,
                    d.notification.pub_id,
                    d.sub_id or sub_id,
                    d.hops,
                    d.broker_ns,
                    broker,
                )
        except grpc.RpcError as e:
            why = f"broke: {_describe(e)}"
        current = self.streams.get(sub_id)
        if not self.stopping and current is not None and current[1] is call:  # not unsubscribed, not replaced
            self.lost(broker, f"stream of {sub_id} at {broker} {why}")

    def lost(self, broker: str, why: str) -> None:
        """The session at ``broker`` is lost: opened again in a greenlet inside an outage, else a failure."""
        if broker in self.reopening:
            return
        until = self.outage_end_ns(broker)
        if until is None:
            self.fail(why)
            return
        self.reopening[broker] = Event()
        self.session_event("lost", broker, reason=why)
        gevent.spawn(self._reopen, broker, until)

    def _reopen(self, broker: str, until_ns: int) -> None:
        held = [(sid, flt) for sid, (_, _, flt, b) in self.streams.items() if b == broker]
        try:
            client = self.reopen(broker, until_ns)
            for sub_id, flt in held:
                self.open(client, sub_id, flt, broker)
            self.session_event("restored", broker, subscriptions=len(held))
        except (grpc.RpcError, RuntimeError) as e:
            self.fail(f"session at {broker} lost, not opened again: {_describe(e)}")
        finally:
            self.reopening.pop(broker).set()

    def unsubscribe(self, sub_id: str) -> None:
        client, call, flt, broker = held = self.streams.pop(sub_id)
        sent = time.time_ns()
        try:
            client.unsubscribe(sub_id, self.client_name)
        except grpc.RpcError:
            self.streams[sub_id] = held  # still held: opened again with the session, then unsubscribed
            raise
        call.cancel()
        context().records.subscription(sent, contract.UNSUBSCRIBE, sub_id, self.client_name, broker, flt)

    def on_stop(self) -> None:
        self.stopping = True  # no session is lost: the streams end because they are cancelled
        for _, call, _, _ in self.streams.values():
            call.cancel()


class Publisher(ScotbedUser):
    """Open-loop publisher: quote k is due at t0 + start_s + k / rate; an HRP is one with a burst rate.

    A lost session (:class:`ScotbedUser`): the batch whose call failed is logged as published, since
    the broker may have taken it before it died (sending it again could duplicate it); the quotes due
    while the broker is down go out, overdue, once the session is open again.
    """

    fixed_count = 0
    abstract = False

    def run_client(self) -> None:
        ctx = context()
        idx = ctx.claim("publisher")
        if idx < 0:
            return
        pp = ctx.plan.publishers[idx]
        self.client_name = pp.name
        quotes: Iterator[Quote] = ctx.source(pp.name).stream(pp.seed)
        client = self.client_for(ctx.plan.broker(pp.broker).address)
        rec = ctx.records
        t0 = ctx.released.get()
        k = 0
        while k < pp.count:
            sleep_until(t0 + pp.intended_offset_ns(k))
            now = time.time_ns()
            batch: list[tuple[str, int, Quote]] = []
            while k < pp.count and len(batch) < pp.batch_max and t0 + pp.intended_offset_ns(k) <= now:
                batch.append((f"pub-{pp.name}-{k}", t0 + pp.intended_offset_ns(k), next(quotes)))
                k += 1
            sent = time.time_ns()
            failed: grpc.RpcError | None = None
            try:
                client.publish([notification_to_pb(pid, pp.name, q, due, sent) for pid, due, q in batch])
            except grpc.RpcError as e:
                failed = e
            for pid, due, q in batch:
                rec.publication(sent, due, pid, pp.name, pp.broker, q)
            if failed is not None:
                reopened = self.lost(pp.broker, f"publish to {pp.broker}: {_describe(failed)}")
                if reopened is None:
                    return
                client = reopened
        context().report("publisher_done")

    def lost(self, broker: str, why: str) -> GrpcClient | None:
        """A new session at ``broker`` once it serves again inside an outage; None when the workload
        failed (outside every outage, or not back by its end)."""
        until = self.outage_end_ns(broker)
        if until is None:
            self.fail(why)
            return None
        self.session_event("lost", broker, reason=why)
        try:
            client = self.reopen(broker, until)
        except SessionLost as e:
            self.fail(f"session at {broker} lost, not opened again: {e}")
            return None
        self.session_event("restored", broker)
        return client


def _describe(e: BaseException) -> str:
    if isinstance(e, grpc.RpcError):
        return f"{e.code().name}: {e.details()}"
    return str(e)


def configure() -> None:
    """Size the user classes from the plan (called by the locustfile at import) and hook Locust's init."""
    plan, _ = plan_from_env()
    # Under gevent, gRPC waits for a channel's next event on a native thread of the hub's threadpool (one
    # per channel with a call open, grpc_user.ClientPool) and for a unary call's reply on another (one
    # per call in flight): without room for every channel (default 10 threads) the streams of the
    # channels beyond that never even see their ack. Threads start lazily, so a generous bound costs nothing.
    clients = len(plan.subscribers) + len(plan.publishers)
    gevent.get_hub().threadpool.maxsize = len(plan.brokers) + clients + 32
    Subscriber.fixed_count = len(plan.subscribers)
    Publisher.fixed_count = len(plan.publishers)
    events.init.add_listener(lambda environment, **_: setup(environment))
