"""Run a workload plan with headless Locust: one master and N worker processes (no gevent in this process).

One call, for a run lifecycle that needs no control between phases::

    result = run_workload(plan_path, run_dir, workers=2, timeout_s=600)

Or the phases, for an orchestrator that wants to act between them::

    with WorkloadSession(plan_path, run_dir, workers=2) as s:   # plan.release.mode == "file"
        s.start()                    # health-checks every broker, then starts Locust
        n = s.wait_subscribed(60)    # every initial subscription acknowledged by its broker
        cluster.wait_quiescent()     # the orchestrator's own check
        s.release()                  # publishers start now (or s.release(t0_ns) at a wall-clock time)
        s.stop_draining()            # optional: after the orchestrator's own drain (wait() does it too)
        result = s.wait(600)         # publishers done + drain_s; logs merged

The master writes ``locust/status.json`` (phase: subscribing, settling,
publishing, draining, done or failed, with counts and ``error``); the release
is the file ``locust/release`` (empty, or t0 in ns). With ``release.mode:
auto`` the master releases by itself once every broker reports quiescent, and
with ``at`` at the plan's wall-clock instant. Locust's CSV and HTML reports
and the process logs go to ``locust/``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from scotbed import contract
from scotbed.broker import tls
from scotbed.errors import ScotbedError
from scotbed.ports import free_port
from scotbed.workloads.entry import PLAN_ENV, RUN_DIR_ENV, locustfile_path
from scotbed.workloads.plan import Plan
from scotbed.workloads.plan_json import load
from scotbed.workloads.records import merge_workload


class WorkloadError(ScotbedError, RuntimeError):
    """A workload that could not start or did not finish; the message says which broker or phase."""


def check_brokers(plan: Plan, timeout_s: float = 5.0) -> None:
    """Raise :class:`WorkloadError` naming every broker of the plan that is not SERVING its health service."""

    def one(bid: str, address: str) -> str | None:
        try:
            with tls.channel(address) as ch:
                reply = health_pb2_grpc.HealthStub(ch).Check(
                    health_pb2.HealthCheckRequest(), timeout=timeout_s, wait_for_ready=True
                )
        except grpc.RpcError as e:
            return f"broker {bid} at {address} is not reachable: {e.code().name} within {timeout_s:g} s"
        if reply.status != health_pb2.HealthCheckResponse.SERVING:
            status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            return f"broker {bid} at {address} is not serving (health status {status})"
        return None

    with ThreadPoolExecutor(max_workers=min(32, max(1, len(plan.brokers)))) as pool:
        problems = [p for p in pool.map(lambda b: one(b.id, b.address), plan.brokers) if p]
    if problems:
        raise WorkloadError("cannot start the workload: " + "; ".join(problems))


@dataclass
class WorkloadResult:
    status: dict[str, Any]
    returncode: int
    duration_s: float
    events: dict[str, int]  # client events by kind (subscribe, unsubscribe, publish, receive)
    workload: dict[str, int]  # lines of workload/subscriptions.jsonl and publications.jsonl
    locust_dir: Path
    worker_returncodes: list[int | None] = field(default_factory=list)


def count_events(run_dir: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in sorted((run_dir / contract.EVENTS_DIR).glob("locust-*.jsonl")):
        with path.open(encoding="utf-8") as f:
            for line in f:
                ev = json.loads(line)["ev"]
                counts[ev] = counts.get(ev, 0) + 1
    return counts


class WorkloadSession:
    """The Locust master and workers of one run, as child processes of this one."""

    def __init__(
        self,
        plan_path: str | Path,
        run_dir: str | Path,
        workers: int = 2,
        health_timeout_s: float = 5.0,
        python: str = sys.executable,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.plan_path = Path(plan_path).resolve()
        self.plan = load(self.plan_path)
        self.run_dir = Path(run_dir).resolve()
        self.locust_dir = self.run_dir / contract.LOCUST_DIR
        self.workers = workers
        self.health_timeout_s = health_timeout_s
        self.python = python
        self.master: subprocess.Popen[bytes] | None = None
        self.worker_procs: list[subprocess.Popen[bytes]] = []
        self._started = 0.0

    def __enter__(self) -> WorkloadSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def status_path(self) -> Path:
        return self.locust_dir / "status.json"

    def start(self, check: bool = True) -> None:
        """Health-check the brokers, then start the master and the workers."""
        if check:
            check_brokers(self.plan, self.health_timeout_s)
        self.locust_dir.mkdir(parents=True, exist_ok=True)
        for stale in (self.status_path, self.locust_dir / "release"):
            stale.unlink(missing_ok=True)
        locustfile = str(locustfile_path())
        env = {
            **os.environ,
            PLAN_ENV: str(self.plan_path),
            RUN_DIR_ENV: str(self.run_dir),
            "PYTHONUNBUFFERED": "1",
        }
        port = free_port()
        users = len(self.plan.subscribers) + len(self.plan.publishers)
        master_cmd = [
            self.python, "-m", "locust", "-f", locustfile, "--headless", "--master",
            "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
            "--expect-workers", str(self.workers), "--expect-workers-max-wait", "60",
            "-u", str(users), "-r", str(max(users, 1)), "--run-time", f"{int(self.plan.timeout_s)}s",
            "--stop-timeout", "5", "--csv", str(self.run_dir / contract.LOCUST_CSV_PREFIX),
            "--html", str(self.run_dir / contract.LOCUST_HTML), "--only-summary",
            "--logfile", str(self.locust_dir / "master.log"),
        ]  # fmt: skip
        self._started = time.monotonic()
        self.master = self._spawn(master_cmd, env, "master")
        for k in range(self.workers):
            cmd = [
                self.python, "-m", "locust", "-f", locustfile, "--worker", "--master-host", "127.0.0.1",
                "--master-port", str(port), "--logfile", str(self.locust_dir / f"worker-{k}.log"),
            ]  # fmt: skip
            self.worker_procs.append(self._spawn(cmd, env, f"worker-{k}"))

    def _spawn(self, cmd: list[str], env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
        out = (self.locust_dir / f"{name}.out").open("wb")
        try:
            return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=self.run_dir)
        finally:
            out.close()

    def status(self) -> dict[str, Any]:
        try:
            doc: dict[str, Any] = json.loads(self.status_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {"phase": "starting"}
        return doc

    def _check_alive(self) -> None:
        st = self.status()
        if st.get("phase") == "failed":
            raise WorkloadError(f"workload failed: {st.get('error')}")
        if self.master is not None and self.master.poll() is not None:
            raise WorkloadError(
                f"the Locust master exited early (code {self.master.returncode}): {self._tail()}"
            )

    def _tail(self, lines: int = 12) -> str:
        for name in ("master.out", "master.log"):
            p = self.locust_dir / name
            if p.exists() and p.stat().st_size:
                return " | ".join(p.read_text(errors="replace").splitlines()[-lines:])
        return "(no output)"

    def wait_subscribed(self, timeout_s: float = 60.0) -> int:
        """Block until every initial subscription is acknowledged; returns how many there are."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self._check_alive()
            st = self.status()
            if st.get("phase") not in ("starting", "subscribing"):
                return int(st["acked"])
            time.sleep(0.05)
        raise WorkloadError(f"subscriptions not all acknowledged within {timeout_s:g} s: {self.status()}")

    def release(self, t0_ns: int | None = None) -> None:
        """Let the publishers start (release mode ``file``): now, or at wall-clock ``t0_ns``."""
        tmp = self.locust_dir / "release.tmp"
        tmp.write_text("" if t0_ns is None else str(t0_ns))
        tmp.replace(self.locust_dir / "release")

    def stop_draining(self) -> None:
        """Let the subscribers close their streams (release mode ``file``) once ``drain_s`` has passed."""
        (self.run_dir / contract.LOCUST_STOP).touch()

    def wait(self, timeout_s: float | None = None) -> WorkloadResult:
        """Until the master exits (with release ``file``, :meth:`stop_draining` first unless done already);
        then merge the workload files and count the events."""
        assert self.master is not None, "start() first"
        if self.plan.release.mode == "file":
            self.stop_draining()
        limit = timeout_s if timeout_s is not None else self.plan.timeout_s + 60
        try:
            code = self.master.wait(timeout=max(0.0, limit - (time.monotonic() - self._started)))
        except subprocess.TimeoutExpired:
            st = self.status()
            self.stop()
            raise WorkloadError(
                f"the workload did not end within {limit:g} s (phase {st.get('phase')})"
            ) from None
        worker_codes: list[int | None] = []
        for w in self.worker_procs:
            try:
                worker_codes.append(w.wait(timeout=15))
            except subprocess.TimeoutExpired:
                w.kill()
                worker_codes.append(w.wait())
        st = self.status()
        duration = time.monotonic() - self._started
        if st.get("phase") != "done":
            raise WorkloadError(
                f"workload ended in phase {st.get('phase')!r} (master exit {code}): "
                f"{st.get('error') or self._tail()}"
            )
        return WorkloadResult(
            status=st,
            returncode=code,
            duration_s=duration,
            events=count_events(self.run_dir),
            workload=merge_workload(self.run_dir),
            locust_dir=self.locust_dir,
            worker_returncodes=worker_codes,
        )

    def stop(self) -> None:
        """Terminate whatever still runs (SIGTERM, then SIGKILL after 5 s)."""
        procs = [p for p in [self.master, *self.worker_procs] if p is not None and p.poll() is None]
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def run_workload(
    plan_path: str | Path, run_dir: str | Path, workers: int = 2, timeout_s: float | None = None
) -> WorkloadResult:
    """Play a plan whose release mode is ``auto`` or ``at`` from start to end (file mode: use the session)."""
    with WorkloadSession(plan_path, run_dir, workers) as s:
        if s.plan.release.mode == "file":
            s.start()
            s.wait_subscribed(s.plan.subscribe_timeout_s)
            s.release()
        else:
            s.start()
        return s.wait(timeout_s)
