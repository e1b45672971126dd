"""The Locust master's bookkeeping (or a single local process's): claims, acks, release, end of the run.

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

import json
import logging
import time
from pathlib import Path
from typing import Any

import gevent
import grpc
from locust.env import Environment

from scotbed import contract
from scotbed.broker import tls
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg
from scotbed.workloads.plan import Plan

log = logging.getLogger("scotbed.workloads")


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
