"""Start, watch and stop N broker processes on 127.0.0.1 (tests, OctopiS, `scotbed run --backend local`).

Usage::

    scot = topology.Scot(topology.paper_fig2(), 3)
    with LocalCluster.from_topology(scot, tmp_path, routing="bid", matching="counting") as cluster:
        addr = cluster.address("b-a-0")              # host:port of a broker
        cluster.wait_quiescent()                     # all queues empty, batches acked, counters stable
        status = cluster.status_all()                # {broker id: StatusReply}
    # leaving the block: SIGTERM, then SIGKILL after `stop_grace_s`; event logs are complete

What :meth:`LocalCluster.start` does, in order:

1. reserves one free port per broker by binding ``127.0.0.1:0`` with
   ``SO_REUSEPORT`` and keeping the sockets open until the brokers are up —
   gRPC binds with ``SO_REUSEPORT`` too, so the broker gets the port and no
   other process can take it in between (the reservations never listen, so
   they never receive connections); likewise one more port per broker whose
   ``prometheus_port`` is 0 (its metrics server binds with ``SO_REUSEADDR``,
   which a bound, non-listening socket admits);
2. rewrites every config's ``listen`` and neighbour addresses (and those metrics ports) to those ports,
   points event logs (unless a config names one) to ``WORKDIR/events/<id>.jsonl``
   and writes the all-brokers file ``WORKDIR/brokers.json``;
3. starts every ``python -m scotbed.broker --config WORKDIR/brokers.json --id ID``
   at once (stdout/stderr in ``WORKDIR/logs/<id>.out|.err``);
4. waits for each broker's ``READY`` line, then polls its gRPC health service
   (in parallel) until all report SERVING; on timeout (default 30 s + 2 s per
   broker: start-up is CPU-bound) it stops everything and raises :class:`LaunchError`
   naming the brokers not ready (and the exit code and stderr tail of any
   that died).

The fleet's admin RPCs live in :mod:`scotbed.broker.fleet` (``status_all``,
``tables_all``, ``wait_quiescent``, ``flush_all``: an ``{id: address}`` map, any
set of brokers); the ``LocalCluster`` methods of the same names are their sync
wrappers (do not call them from inside a running event loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

from scotbed import contract
from scotbed.broker import fleet, metrics, tls
from scotbed.config import BrokerConfig, LogConfig, build_configs, dump_all
from scotbed.errors import ScotbedError
from scotbed.v1 import scotbed_pb2 as pb

HOST = "127.0.0.1"


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back for the block (main thread only); one that came meanwhile is handled
    after it, by the handler that was in place.

    Blocking the signals in the main thread's mask is not enough: the kernel hands a process-directed
    signal to any thread that does not block it (gRPC's, a progress thread), and Python then runs the
    handler in the main thread at its next bytecode, inside the block. So the Python-level handlers are
    swapped for one that only notes the signal.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[tuple[int, FrameType | None]] = []

    def note(signum: int, frame: FrameType | None) -> None:
        caught.append((signum, frame))

    held = {int(s): signal.signal(s, note) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in held.items():
            signal.signal(s, handler)
        if caught:
            signum, frame = caught[0]
            handler = held[signum]
            if callable(handler):
                handler(signum, frame)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)


class LaunchError(ScotbedError, RuntimeError):
    """Brokers that did not come up; the message names them and why."""


def reserve_ports(n: int, host: str = HOST) -> list[socket.socket]:
    """``n`` bound, non-listening sockets holding distinct free ports (close them once the brokers bound)."""
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        s.bind((host, 0))
        socks.append(s)
    return socks


def with_addresses(configs: Iterable[BrokerConfig], addresses: Mapping[str, str]) -> list[BrokerConfig]:
    """The configs with ``listen`` and every neighbour address taken from ``addresses``."""
    out = []
    for c in configs:
        neighbours = tuple(replace(n, address=addresses[n.id]) for n in c.neighbours)
        out.append(replace(c, listen=addresses[c.id], neighbours=neighbours))
    return out


def with_metrics_ports(configs: Iterable[BrokerConfig], ports: Iterable[int]) -> list[BrokerConfig]:
    """The configs whose ``prometheus_port`` is 0 (any free port) given the next of ``ports`` each."""
    free = iter(ports)
    return [replace(c, prometheus_port=next(free)) if c.prometheus_port == 0 else c for c in configs]


@dataclass
class BrokerProcess:
    config: BrokerConfig
    proc: subprocess.Popen[bytes] | None = None
    stdout: Path | None = None
    stderr: Path | None = None

    @property
    def id(self) -> str:
        return self.config.id

    @property
    def address(self) -> str:
        return self.config.listen

    def returncode(self) -> int | None:
        return self.proc.poll() if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def printed_ready(self) -> bool:
        """The process wrote its ``READY <id> <host:port>`` line (its server is up)."""
        if self.stdout is None or not self.stdout.exists():
            return False
        with self.stdout.open("rb") as fh:
            return any(line.startswith(b"READY ") for line in fh)

    def stderr_tail(self, lines: int = 8) -> str:
        if self.stderr is None or not self.stderr.exists():
            return ""
        return "\n".join(self.stderr.read_text(errors="replace").splitlines()[-lines:])


class LocalCluster:
    def __init__(
        self,
        configs: Iterable[BrokerConfig],
        workdir: str | Path,
        *,
        python: str = sys.executable,
        ready_timeout_s: float | None = None,
        stop_grace_s: float = 10.0,
        log_suffix: str = ".jsonl",
        env: Mapping[str, str] | None = None,
        broker_args: Iterable[str] = (),
        on_start: Callable[[str, int], None] | None = None,
    ) -> None:
        self.workdir = Path(workdir)
        self.python = python
        self.configs = list(configs)
        # start-up is CPU-bound (every process imports gRPC and numpy): allow more time for more brokers
        self.ready_timeout_s = (
            ready_timeout_s if ready_timeout_s is not None else 30.0 + 2.0 * len(self.configs)
        )
        self.stop_grace_s = stop_grace_s
        self.log_suffix = log_suffix
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.broker_args = list(broker_args)
        self.on_start = on_start  # called with (broker id, pid) after each process start
        self.brokers: dict[str, BrokerProcess] = {}
        self.config_path = self.workdir / contract.BROKERS

    @classmethod
    def from_topology(
        cls, scot: Any, workdir: str | Path, launcher: Mapping[str, Any] | None = None, **common: Any
    ) -> LocalCluster:
        """Configs for every broker of a :class:`~scotbed.topology.Scot`; ``common`` as in build_configs."""
        placeholder = {b.id: f"{HOST}:0" for b in scot.brokers}
        return cls(build_configs(scot, placeholder, **common), workdir, **(launcher or {}))

    # --- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        (self.workdir / contract.EVENTS_DIR).mkdir(parents=True, exist_ok=True)
        reservations = reserve_ports(len(self.configs))
        metrics_ports = reserve_ports(sum(c.prometheus_port == 0 for c in self.configs))
        try:
            addresses = {
                c.id: f"{HOST}:{s.getsockname()[1]}" for c, s in zip(self.configs, reservations, strict=True)
            }
            configs = with_addresses(self.configs, addresses)
            configs = with_metrics_ports(configs, [s.getsockname()[1] for s in metrics_ports])
            self.configs = [self._with_log(c) for c in configs]
            self.config_path.write_text(json.dumps(dump_all(self.configs), indent=1))
            for c in self.configs:
                self.brokers[c.id] = BrokerProcess(c)
                self.start_broker(c.id)
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        finally:
            for s in [*reservations, *metrics_ports]:
                s.close()

    def _with_log(self, c: BrokerConfig) -> BrokerConfig:
        if c.log.path != LogConfig().path:
            return c
        return replace(
            c, log=replace(c.log, path=str(self.workdir / contract.events_file(c.id, self.log_suffix)))
        )

    def start_broker(self, broker_id: str) -> None:
        """(Re)start one broker process with its config (same port); does not wait for health."""
        b = self.brokers[broker_id]
        if b.alive():
            raise LaunchError(f"{broker_id} is already running (pid {b.proc.pid if b.proc else '?'})")
        b.stdout = self.workdir / "logs" / f"{broker_id}.out"
        b.stderr = self.workdir / "logs" / f"{broker_id}.err"
        cmd = [self.python, "-m", "scotbed.broker", "--config", str(self.config_path), "--id", broker_id]
        # SIGINT/SIGTERM wait until the child is known (b.proc) and recorded (on_start): a handler that
        # raised in between would leave a broker nobody can stop
        with signals_deferred(), b.stdout.open("ab") as out, b.stderr.open("ab") as err:
            b.proc = subprocess.Popen(
                [*cmd, *self.broker_args], stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=self.env
            )
            if self.on_start is not None:
                self.on_start(broker_id, b.proc.pid)

    def wait_ready(self, ids: Iterable[str] | None = None, timeout_s: float | None = None) -> None:
        asyncio.run(self._wait_ready(list(ids or self.brokers), timeout_s or self.ready_timeout_s))

    async def _wait_ready(self, ids: list[str], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        pending = set(ids)
        last: dict[str, str] = {}
        # A broker is health-checked once it printed READY, so the launcher does not hammer processes still
        # importing; short reconnect backoff so a refused first attempt is retried quickly.
        opts = [("grpc.initial_reconnect_backoff_ms", 100), ("grpc.max_reconnect_backoff_ms", 500)]
        channels = {i: tls.aio_channel(self.brokers[i].address, options=opts) for i in ids}
        try:
            while pending:
                dead = [i for i in sorted(pending) if not self.brokers[i].alive()]
                if dead:
                    raise LaunchError(
                        "brokers exited during start-up: "
                        + "; ".join(
                            f"{i} (exit {self.brokers[i].returncode()}): {self.brokers[i].stderr_tail(4)}"
                            for i in dead
                        )
                    )
                order = [i for i in sorted(pending) if self.brokers[i].printed_ready()]
                results = await asyncio.gather(*(fleet.health(channels[i]) for i in order))
                for i, (ok, text) in zip(order, results, strict=True):
                    last[i] = text
                    if ok:
                        pending.discard(i)
                if not pending:
                    return
                if time.monotonic() >= deadline:
                    names = ", ".join(f"{i} ({last.get(i, 'no READY line yet')})" for i in sorted(pending))
                    raise LaunchError(
                        f"{len(pending)} broker(s) not SERVING after {timeout_s:.0f} s: {names}"
                    )
                await asyncio.sleep(0.05)
        finally:
            await asyncio.gather(*(c.close() for c in channels.values()))

    def signal(self, broker_id: str, sig: int = signal.SIGTERM) -> None:
        b = self.brokers[broker_id]
        if b.proc is not None and b.alive():
            b.proc.send_signal(sig)

    def kill(self, broker_id: str) -> int | None:
        """SIGKILL one broker (a crash) and reap it."""
        b = self.brokers[broker_id]
        if b.proc is None:
            return None
        if b.alive():
            b.proc.kill()
        return b.proc.wait()

    def terminate(self, broker_id: str, grace_s: float | None = None) -> int | None:
        """SIGTERM one broker; SIGKILL after the grace period. Returns its exit code."""
        return self._stop([self.brokers[broker_id]], self.stop_grace_s if grace_s is None else grace_s)[
            broker_id
        ]

    def stop(self) -> dict[str, int | None]:
        """SIGTERM every broker at once, then SIGKILL whatever is left after ``stop_grace_s``."""
        return self._stop(list(self.brokers.values()), self.stop_grace_s)

    @staticmethod
    def _stop(brokers: list[BrokerProcess], grace_s: float) -> dict[str, int | None]:
        for b in brokers:
            if b.proc is not None and b.alive():
                b.proc.send_signal(signal.SIGTERM)
                b.proc.send_signal(signal.SIGCONT)  # a frozen (SIGSTOPped) broker handles its SIGTERM too
        deadline = time.monotonic() + grace_s
        codes: dict[str, int | None] = {}
        for b in brokers:
            if b.proc is None:
                codes[b.id] = None
                continue
            try:
                codes[b.id] = b.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                b.proc.kill()
                codes[b.id] = b.proc.wait()
        return codes

    # --- where things are ---------------------------------------------------------------

    def addresses(self) -> dict[str, str]:
        """{broker id: host:port} of every broker."""
        return {i: b.address for i, b in self.brokers.items()}

    def address(self, broker_id: str) -> str:
        return self.brokers[broker_id].address

    def metrics_addresses(self) -> dict[str, str]:
        """{broker id: host:port of its Prometheus endpoint} of every broker that serves one."""
        return metrics.addresses([b.config for b in self.brokers.values()], self.addresses())

    def event_log(self, broker_id: str) -> Path:
        return Path(self.brokers[broker_id].config.log.path)

    # --- admin (sync wrappers) -------------------------------------------------------------

    def status_all(self) -> dict[str, pb.StatusReply]:
        return asyncio.run(fleet.status_all(self.addresses()))

    def tables_all(self) -> dict[str, pb.TableReply]:
        return asyncio.run(fleet.tables_all(self.addresses()))

    def flush_all(self) -> dict[str, int]:
        return asyncio.run(fleet.flush_all(self.addresses()))

    def wait_quiescent(self, timeout_s: float = 30.0, stable_s: float = 0.2) -> dict[str, pb.StatusReply]:
        return asyncio.run(fleet.wait_quiescent(self.addresses(), timeout_s, stable_s))
