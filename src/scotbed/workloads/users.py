"""Locust users that play a workload plan: subscribers (with churn) and open-loop publishers (and HRPs).

Only Locust processes import this module (it needs gevent); the orchestrator
uses :mod:`scotbed.workloads.runner`.

Who plays which client: each user claims the next subscriber or publisher
of the plan from the master (a ``scotbed_claim`` message answered by
``scotbed_claimed``), so any distribution of users over workers plays every
client exactly once; ids come from the plan, not from the claim order.

The run, as the master's :class:`Coordinator` drives it (``locust/status.json``
shows the phase to the orchestrator):

1. ``subscribing``: subscribers open one Subscribe stream per initial
   subscription, wait for each ack and report them (``scotbed_subscribed``);
2. ``settling``: once every initial subscription is acknowledged, the release
   rule of the plan decides t0 — ``auto``: every broker reports quiescent
   (Admin.Status) and ``settle_s`` passed; ``file``: the orchestrator creates
   ``locust/release`` (optionally holding t0 in ns); ``at``: the plan's ``at_ns``;
3. ``publishing``: t0 is broadcast (``scotbed_release``); publisher i sends
   quote k at t0 + start_s + k / rate (open loop: when behind, it sends every
   overdue quote in one batch and logs each with its intended time), and
   subscribers run their churn actions at t0 + at_s;
4. ``draining``: when every publisher and every subscriber reported done, the
   master waits ``drain_s`` for the last deliveries and, with release ``file``, until the
   orchestrator creates ``locust/stop`` (it waits for the brokers' backlog to drain first);
5. ``done`` (or ``failed`` with an ``error``): the master quits, the workers
   flush their logs and exit.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gevent
import grpc
from gevent.event import AsyncResult
from locust import constant, events, task
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from scotbed import contract
from scotbed.broker import tls
from scotbed.broker.looplag import LoopProbe
from scotbed.config import LogConfig
from scotbed.filters import Filter
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg
from scotbed.wire import notification_to_pb
from scotbed.workloads.entry import PLAN_ENV, RUN_DIR_ENV
from scotbed.workloads.grpc_user import GrpcClient, GrpcUser
from scotbed.workloads.plan import Plan
from scotbed.workloads.plan_json import load
from scotbed.workloads.quotes import QuoteSource
from scotbed.workloads.records import ProcessRecords
from scotbed.workloads.schema import Quote

CLAIM, CLAIMED, REPORT, RELEASE = "scotbed_claim", "scotbed_claimed", "scotbed_report", "scotbed_release"
FLUSH_INTERVAL_S = 0.2
CLIENT_SAMPLE_S = LogConfig.sample_interval_ms / 1000.0  # the brokers' default `loop` period, so both compare

log = logging.getLogger("scotbed.workloads")


def plan_from_env() -> tuple[Plan, Path]:
    path = os.environ.get(PLAN_ENV)
    if not path:
        raise RuntimeError(f"set {PLAN_ENV} to the workload plan (JSON) this locustfile plays")
    return load(path), Path(os.environ.get(RUN_DIR_ENV, "."))


class Coordinator:
    """Master-side (or local) bookkeeping: claims, acks, release, end of the run."""

    def __init__(self, environment: Environment, plan: Plan, run_dir: Path) -> None:
        self.env = environment
        self.plan = plan
        self.status_path = run_dir / contract.LOCUST_STATUS
        self.release_path = run_dir / contract.LOCUST_RELEASE
        self.stop_path = run_dir / contract.LOCUST_STOP
        self.next = {"subscriber": 0, "publisher": 0}
        self.limit = {"subscriber": len(plan.subscribers), "publisher": len(plan.publishers)}
        self.acked = 0
        self.received = 0  # deliveries the subscribers have read, as the processes report them
        self.done = {"subscriber": 0, "publisher": 0}
        self.phase = "subscribing"
        self.t0_ns = 0
        self.error = ""
        self.deliver_release: Any = None  # callable(t0_ns): how t0 reaches the users
        self._write()

    def _write(self) -> None:
        self.status_path.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "phase": self.phase,
            "expected_subscriptions": self.plan.subscription_count(),
            "acked": self.acked,
            "subscribers_done": self.done["subscriber"],
            "publishers_done": self.done["publisher"],
            "received": self.received,
            "subscribers": self.limit["subscriber"],
            "publishers": self.limit["publisher"],
            "t0_ns": self.t0_ns,
            "error": self.error,
            "updated_ns": time.time_ns(),
        }
        tmp = self.status_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        tmp.replace(self.status_path)

    def allocate(self, role: str) -> int:
        k = self.next[role]
        if k >= self.limit[role]:
            return -1
        self.next[role] = k + 1
        return k

    def start(self) -> None:
        if self.plan.subscription_count() == 0:
            gevent.spawn(self._release)
        gevent.spawn(self._watch_subscribe_timeout)

    def report(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "subscribed":
            self.acked += int(data["n"])
            if self.acked == self.plan.subscription_count() and self.phase == "subscribing":
                self.phase = "settling"
                gevent.spawn(self._release)
        elif kind in ("subscriber_done", "publisher_done"):
            self.done[kind.split("_")[0]] += 1
            if self.done == self.limit and self.phase == "publishing":
                self.phase = "draining"
                gevent.spawn(self._drain)
        elif kind == "received":
            self.received += int(data["n"])
        elif kind == "failed":
            self.fail(str(data.get("message")))
        self._write()

    def fail(self, message: str) -> None:
        if self.phase in ("failed", "done"):
            return
        log.error("workload failed: %s", message)
        self.phase, self.error = "failed", message
        self._write()
        self.env.process_exit_code = 2
        gevent.spawn_later(0.2, self._quit)

    def _quit(self) -> None:
        assert self.env.runner is not None
        self.env.runner.quit()

    def _watch_subscribe_timeout(self) -> None:
        gevent.sleep(self.plan.subscribe_timeout_s)
        if self.phase == "subscribing":
            self.fail(
                f"only {self.acked} of {self.plan.subscription_count()} subscriptions were acknowledged "
                f"within subscribe_timeout_s={self.plan.subscribe_timeout_s}"
            )

    def _release(self) -> None:
        rel = self.plan.release
        if rel.mode == "at":
            t0 = rel.at_ns
        elif rel.mode == "file":
            while not self.release_path.exists():
                gevent.sleep(0.05)
            text = self.release_path.read_text().strip()
            t0 = int(text) if text else time.time_ns() + 200_000_000
        else:
            self._wait_quiescent(rel.quiescence_timeout_s)
            gevent.sleep(rel.settle_s)
            t0 = time.time_ns() + 200_000_000
        self.t0_ns, self.phase = t0, "publishing"
        self._write()
        self.deliver_release(t0)
        if self.done == self.limit:
            self.phase = "draining"
            gevent.spawn(self._drain)

    def _wait_quiescent(self, timeout_s: float) -> None:
        """Until every broker reports quiescent twice in a row; a broker without Admin is skipped."""
        deadline = time.monotonic() + timeout_s
        channels = [tls.channel(b.address) for b in self.plan.brokers]
        stubs = [pbg.AdminStub(c) for c in channels]
        streak = 0
        try:
            while time.monotonic() < deadline:
                quiet = True
                for stub, b in zip(stubs, self.plan.brokers, strict=True):
                    try:
                        quiet &= stub.Status(pb.StatusRequest(), timeout=2.0).quiescent
                    except grpc.RpcError as e:
                        if e.code() != grpc.StatusCode.UNIMPLEMENTED:
                            log.warning("broker %s: Status failed: %s", b.id, e.code().name)
                            quiet = False
                streak = streak + 1 if quiet else 0
                if streak >= 2:
                    return
                gevent.sleep(0.1)
            log.warning("brokers not quiescent after %.1f s; releasing publishers anyway", timeout_s)
        finally:
            for c in channels:
                c.close()

    def _drain(self) -> None:
        gevent.sleep(self.plan.drain_s)
        while self.plan.release.mode == "file" and not self.stop_path.exists():
            gevent.sleep(0.05)
        if self.phase != "draining":
            return
        self.phase = "done"
        self._write()
        self.env.process_exit_code = 0
        self._quit()


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
            name = f"locust-w{index}" if isinstance(runner, WorkerRunner) else "locust-local"
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
    """A user that plays one plan client once, then idles until the run ends."""

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

    @task
    def play(self) -> None:
        if self.finished:
            return
        self.finished = True
        self.run_client()

    def run_client(self) -> None:
        raise NotImplementedError


class Subscriber(ScotbedUser):
    """Holds one Subscribe stream per subscription, logs receives, and runs its churn actions."""

    fixed_count = 0  # set by configure() from the plan
    abstract = False

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.streams: dict[str, tuple[GrpcClient, Any, Filter, str]] = {}

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
                if a.op == "subscribe":
                    assert a.filter is not None
                    self.subscribe(a.sub_id, a.filter, a.broker)
                else:
                    self.unsubscribe(a.sub_id)
        except (grpc.RpcError, RuntimeError) as e:
            self.fail(f"churn action: {_describe(e)}")
            return
        ctx.report("subscriber_done")

    def subscribe(self, sub_id: str, flt: Filter, broker: str) -> None:
        ctx = context()
        client = self.client_for(ctx.plan.broker(broker).address)
        sent = time.time_ns()
        call, ack = client.subscribe(sub_id, self.client_name, flt)
        self.streams[sub_id] = (client, call, flt, broker)
        ctx.records.subscription(
            sent, contract.SUBSCRIBE, sub_id, self.client_name, broker, flt, ack_ns=ack.ts_ns
        )
        gevent.spawn(self._receive, client, call, sub_id, broker)

    def _receive(self, client: GrpcClient, call: Any, sub_id: str, broker: str) -> None:
        rec = context().records
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
            self.fail(f"stream of {sub_id} at {broker} broke: {_describe(e)}")

    def unsubscribe(self, sub_id: str) -> None:
        client, call, flt, broker = self.streams.pop(sub_id)
        sent = time.time_ns()
        client.unsubscribe(sub_id, self.client_name)
        call.cancel()
        context().records.subscription(sent, contract.UNSUBSCRIBE, sub_id, self.client_name, broker, flt)


class Publisher(ScotbedUser):
    """Open-loop publisher: quote k is due at t0 + start_s + k / rate; an HRP is one with a burst rate."""

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
            try:
                client.publish([notification_to_pb(pid, pp.name, q, due, sent) for pid, due, q in batch])
            except grpc.RpcError as e:
                self.fail(f"publish to {pp.broker}: {_describe(e)}")
                return
            for pid, due, q in batch:
                rec.publication(sent, due, pid, pp.name, pp.broker, q)
        context().report("publisher_done")


def _describe(e: BaseException) -> str:
    if isinstance(e, grpc.RpcError):
        return f"{e.code().name}: {e.details()}"
    return str(e)


def configure() -> None:
    """Size the user classes from the plan (called by the locustfile at import) and hook Locust's init."""
    plan, _ = plan_from_env()
    # Under gevent, gRPC waits for a call's next event on a native thread of the hub's threadpool, and an
    # open Subscribe stream waits all the time: without room for every stream (default 10 threads) the
    # streams beyond that never even see their ack. Threads start lazily, so a generous bound costs nothing.
    streams = sum(len(s.subscriptions) + len(s.actions) for s in plan.subscribers)
    gevent.get_hub().threadpool.maxsize = streams + len(plan.publishers) + 32
    Subscriber.fixed_count = len(plan.subscribers)
    Publisher.fixed_count = len(plan.publishers)
    events.init.add_listener(lambda environment, **_: setup(environment))
