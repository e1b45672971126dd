"""Fault timeline (spec ``faults:``): injected on purpose during the publish phase, and losses attributed.

A spec lists faults with times relative to the release of the publishers::

    faults:
      - {at_s: 2, action: kill, broker: b-v1-0}       # SIGKILL
      - {at_s: 4, action: restart, broker: b-v1-0}    # start it again (same port, same config)
      - {at_s: 1, action: cut, broker: b-v0-0, neighbour: b-v1-0}     # both directions hold their batches
      - {at_s: 3, action: restore, broker: b-v0-0, neighbour: b-v1-0}
      - {at_s: 5, action: capacity, broker: b-v0-0, neighbour: b-v1-0, capacity_msgs_per_s: 50}
      - {at_s: 6, action: latency, broker: b-v0-0, neighbour: b-v1-0, latency_ms: 80, jitter_ms: 10}

``stop`` is a SIGTERM (the broker drains what it can). A stopped or killed
broker must be restarted later in the timeline and a cut link restored, so the
run can drain. ``latency`` sets both directions' propagation delay (ms as
given, not scaled by ``workload.time_scale``) for batches leaving the queues
from then on; it delays and loses nothing, so it opens no fault window.

Backends: those declaring ``supports_faults`` (the deployment's ``fault_target``). On compose a
broker is its container (``compose kill``, ``stop``, ``start``:
:mod:`scotbed.orchestrator.backends.compose_faults`); link faults go through
the broker's Admin RPC on every backend.

Rejoining (the guarantee). A restarted broker dials its neighbours with a new
incarnation; each neighbour resends every batch the old process had not
acknowledged (they wait in its unacknowledged window and output queue), so
nothing that was still on a link is lost, and then replays its *sent log* —
every subscription and unsubscription it had sent the old process, in order —
which rebuilds the restarted broker's routing table for every plug-in without
re-flooding anything (:mod:`scotbed.broker.rejoin`). Lost are the envelopes
the old process had acknowledged but not yet forwarded, state a plug-in
derives from publications (selective pruning's history), and the sessions of
the broker's own clients with their subscriptions (the clients wait the outage
out and open them again: :func:`outages`, :mod:`scotbed.workloads.users`); batches the old process had
forwarded but not acknowledged are forwarded again (duplicates). A link reset
between two running brokers loses and repeats nothing: resent batches are
recognised by (sender incarnation, sequence number) and dropped.

Windows and attribution. ``faults.jsonl`` in the run directory records when
each action actually happened. A *fault window* runs from a kill/stop/cut to
its restart/restore being done (a restart is done when the broker is ready,
every link to a running neighbour is up both ways and the sessions its clients
lost are open again), widened by a grace on both
sides (publications in flight at the fault). The analysis counts a missing
delivery whose publication was intended inside a window as
``missing_in_fault_windows``; only the rest count as ``missing`` for the
verdict, in ``summary.json`` and the report alike
(:mod:`scotbed.analysis.faultwindows`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from scotbed import contract
from scotbed.analysis.faultwindows import GRACE_S, OPENS
from scotbed.experiment.spec_errors import SpecError
from scotbed.experiment.spec_faults import FaultSpec

REJOIN_TIMEOUT_S = 30.0  # a restarted broker's links must be up both ways by then
CUT_MSGS_PER_S = 1e-6  # a cut link: the token bucket releases nothing until restored
LINK_ACTIONS = ("cut", "restore", "capacity", "latency")


def check(faults: list[FaultSpec], brokers: set[str], neighbours: Callable[[str], set[str]]) -> list[str]:
    """Problems of a timeline against the overlay, one ``faults[k]...: why`` line each."""
    problems = []
    for k, f in enumerate(faults):
        where = f"faults[{k}]"
        if f.broker not in brokers:
            problems.append(f"{where}.broker: {f.broker!r} is not a broker of this overlay")
            continue
        link = f.action in LINK_ACTIONS
        if link and (f.neighbour is None or f.neighbour not in neighbours(f.broker)):
            problems.append(f"{where}.neighbour: {f.neighbour!r} is not a neighbour of {f.broker}")
        if not link and f.neighbour is not None:
            problems.append(f"{where}.neighbour: only {', '.join(LINK_ACTIONS)} name a link")
        if (f.action == "capacity") != (f.capacity_msgs_per_s is not None):
            problems.append(f"{where}.capacity_msgs_per_s: required for capacity, and only there")
        if (f.action == "latency") != (f.latency_ms is not None) or (f.jitter_ms and f.action != "latency"):
            problems.append(f"{where}.latency_ms: required for latency, and (with jitter_ms) only there")
        if f.action in OPENS and not any(
            g.action == OPENS[f.action]
            and g.broker == f.broker
            and g.neighbour == f.neighbour
            and g.at_s > f.at_s
            for g in faults
        ):
            problems.append(f"{where}: a {f.action} needs a later {OPENS[f.action]} of the same target")
    return problems


def outages(faults: list[FaultSpec], ready_s: float) -> dict[str, tuple[tuple[float, float], ...]]:
    """Broker -> the ``(from_s, until_s)`` spans after release in which the timeline has it down on purpose:
    from a kill or stop (less :data:`~scotbed.analysis.faultwindows.GRACE_S`: the timeline's clock starts
    near the release, not at it) until the latest its restart is done (the restart's ``at_s`` plus the
    bounds it waits: ``ready_s`` to serve, :data:`REJOIN_TIMEOUT_S` for the links). The clients of a broker
    wait its outages out (:mod:`scotbed.workloads.users`)."""
    out: dict[str, list[tuple[float, float]]] = {}
    timeline = sorted(faults, key=lambda f: f.at_s)
    for k, f in enumerate(timeline):
        if f.action not in ("kill", "stop"):
            continue
        restart = next((g for g in timeline[k + 1 :] if g.action == "restart" and g.broker == f.broker), None)
        if restart is None:  # refused by check(): a kill or stop needs a later restart
            continue
        span = (max(0.0, f.at_s - GRACE_S), restart.at_s + ready_s + REJOIN_TIMEOUT_S)
        out.setdefault(f.broker, []).append(span)
    return {b: tuple(spans) for b, spans in out.items()}


class Target(Protocol):
    """A deployment's fault hooks: LocalCluster on local, ComposeFaults on compose."""

    configs: list[Any]  # the brokers' configs (BrokerConfig): the link capacities a restore goes back to

    def kill(self, broker_id: str) -> Any: ...
    def terminate(self, broker_id: str) -> Any: ...
    def start_broker(self, broker_id: str) -> None: ...
    def wait_ready(self, ids: Iterable[str] | None = None) -> None: ...
    def address(self, broker_id: str) -> str: ...


class Injector:
    """Runs a timeline against a deployment in a thread; knows which brokers are down on purpose."""

    def __init__(self, faults: list[FaultSpec], cluster: Target, run_dir: Path) -> None:
        self.faults = sorted(faults, key=lambda f: f.at_s)
        self.cluster = cluster
        self.log = run_dir / contract.FAULTS
        self.down: set[str] = set()
        self.error: str | None = None
        self._stop = threading.Event()
        self._idle = threading.Event()  # clear while a fault is being applied (a restart takes seconds)
        self._idle.set()
        self._thread = threading.Thread(target=self._run, name="faults", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def wait_applied(self, timeout_s: float) -> bool:
        """Wait for the fault being applied, if any, to finish (a restart until its broker serves on its
        possibly new address); later faults of the timeline are not waited for."""
        return self._idle.wait(timeout_s)

    def stopping(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s``; True once :meth:`stop` was called."""
        return self._stop.wait(timeout_s)

    def clock_origin(self) -> float | None:
        """When the timeline's clock starts (``time.monotonic()``), called in the injector's thread;
        None when stopped first. Here at once; a backend whose clients start elsewhere waits for them."""
        return time.monotonic()

    def _run(self) -> None:
        t0 = self.clock_origin()
        if t0 is None:
            return
        for f in self.faults:
            if self.stopping(max(0.0, t0 + f.at_s - time.monotonic())):
                return
            start = time.time_ns()
            self._idle.clear()
            try:
                self._apply(f)
            except Exception as e:  # reported by the run (fails it); the thread must not die silently
                self.error = f"faults: {f.action} {f.broker}: {type(e).__name__}: {e}"
                return
            finally:
                self._idle.set()
            target = f.broker if f.neighbour is None else f"{f.broker}<->{f.neighbour}"
            rec = {
                "action": f.action,
                "target": target,
                "at_s": f.at_s,
                "start_ns": start,
                "end_ns": time.time_ns(),
            }
            with self.log.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")

    def _apply(self, f: FaultSpec) -> None:
        c = self.cluster
        if f.action in ("kill", "stop"):
            self.down.add(f.broker)
            c.kill(f.broker) if f.action == "kill" else c.terminate(f.broker)
        elif f.action == "restart":
            c.start_broker(f.broker)
            c.wait_ready([f.broker])
            self.down.discard(f.broker)
            self._rejoined(f.broker)
        elif f.action == "latency":
            assert f.neighbour is not None and f.latency_ms is not None
            ms, jitter = f.latency_ms, f.jitter_ms
            for a, b in ((f.broker, f.neighbour), (f.neighbour, f.broker)):
                self._set_latency(a, b, ms, jitter)
        else:
            assert f.neighbour is not None
            for a, b in ((f.broker, f.neighbour), (f.neighbour, f.broker)):
                self._set_capacity(a, b, self._rate(f, a, b))

    def _rate(self, f: FaultSpec, broker: str, neighbour: str) -> float:
        if f.action == "cut":
            return CUT_MSGS_PER_S
        if f.action == "capacity":
            return float(f.capacity_msgs_per_s or 0.0)
        cfg = next(c for c in self.cluster.configs if c.id == broker)
        n = cfg.neighbour(neighbour)
        return n.capacity_msgs_per_s if n.capacity_msgs_per_s is not None else cfg.link_capacity_msgs_per_s

    def _set_capacity(self, broker: str, neighbour: str, rate: float) -> None:
        self._admin(broker, lambda client: client.set_link_capacity(rate, neighbour))

    def _rejoined(self, broker: str) -> None:
        """Wait until every link between ``broker`` and a running neighbour is up both ways: the
        neighbours have seen its new incarnation and queued their replays, so the restart is done."""
        cfg = next(c for c in self.cluster.configs if c.id == broker)
        up = [n.id for n in cfg.neighbours if n.id not in self.down]
        deadline = time.monotonic() + REJOIN_TIMEOUT_S
        while not all(self._link_up(a, b) for n in up for a, b in ((broker, n), (n, broker))):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{broker}: links not back {REJOIN_TIMEOUT_S:g} s after the restart")
            time.sleep(0.05)

    def _link_up(self, broker: str, neighbour: str) -> bool:
        import asyncio

        from scotbed.broker.client import BrokerClient

        async def go() -> bool:
            async with BrokerClient(self.cluster.address(broker)) as client:
                status = await client.status()
            return any(link.neighbour == neighbour and link.connected for link in status.links)

        return asyncio.run(go())

    def _set_latency(self, broker: str, neighbour: str, ms: float, jitter: float) -> None:
        self._admin(broker, lambda client: client.set_link_latency(ms, jitter, neighbour))

    def _admin(self, broker: str, call: Callable[[Any], Awaitable[None]]) -> None:
        """One Admin call on ``broker`` (a :class:`~scotbed.broker.client.BrokerClient` method)."""
        import asyncio

        from scotbed.broker.client import BrokerClient

        async def go() -> None:
            async with BrokerClient(self.cluster.address(broker)) as client:
                await call(client)

        asyncio.run(go())


def validate(spec: Any, scot: Any, backend: str) -> None:
    """Raise SpecError when the spec's timeline does not fit the overlay or the backend."""
    if not spec.faults:
        return
    from scotbed.orchestrator.backends import REGISTRY, backend_class

    able = [n for n in REGISTRY if backend_class(n).supports_faults]
    if backend not in able:
        raise SpecError(f"faults: injected on {' and '.join(able)} only in this build, not {backend}")
    ids = {b.id for b in scot.brokers}
    problems = check(spec.faults, ids, lambda b: {n.id for n in scot.neighbours(b)})
    if problems:
        raise SpecError(problems)


def inject(spec: Any, deployment: Any, run_dir: Path | None) -> Injector | None:
    """Start the spec's timeline now (the publishers were just released); None without faults."""
    if not spec.faults or run_dir is None:
        return None
    injector = Injector(list(spec.faults), deployment.fault_target, run_dir)
    injector.start()
    return injector
