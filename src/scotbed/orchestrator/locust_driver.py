"""Host-side Locust driving: the workload as a Locust master and workers on this host, phase by phase.

The run lifecycle (:mod:`scotbed.orchestrator.run`) decides when; this module does the Locust
part: start the processes (recorded in the run state, so ``scotbed down`` finds them), wait until
every initial subscription is acknowledged, release the publishers, watch the master until the
publications end, keep the subscribers connected while the brokers' backlog drains (bounded by
``timeouts.drain_s``; the drain record says whether it emptied), and stop everything on failure.
Failures are :class:`WorkloadFailed` with the phase first (``subscribe: ...``, ``publish: ...``);
the lifecycle adds the run directory. Every wait polls the Locust master and workers
(:mod:`.procwatch`): one that ended or froze before the workload did fails the run at the next
poll, named, instead of the wait running out its timeout.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.orchestrator import procwatch
from scotbed.orchestrator.progress import Phase
from scotbed.orchestrator.state import RunState


class WorkloadFailed(RuntimeError):
    """The host-side workload could not go on; the message starts with the phase."""


class HostDriver:
    """What the lifecycle needs of a workload driver on this host: its session once started, and a stop."""

    def __init__(self, run_dir: Path, check_brokers: Callable[[], None]) -> None:
        self.run_dir = run_dir
        self.check_brokers = check_brokers  # raises when a broker died; called on every poll
        self.session: Any = None

    @property
    def started(self) -> bool:
        return self.session is not None

    def stop(self) -> None:
        if self.session is not None:
            self.session.stop()


class HostLocust(HostDriver):
    """One run's Locust master and workers (:class:`scotbed.workloads.runner.WorkloadSession`)."""

    def __init__(
        self, run_dir: Path, state: RunState, workers: int, check_brokers: Callable[[], None]
    ) -> None:
        super().__init__(run_dir, check_brokers)
        self.state = state
        self.workers = workers

    def start(self, plan_path: Path, total: int, timeout_s: float, ph: Phase) -> int:
        """Start Locust and wait until the ``total`` initial subscriptions are acknowledged."""
        from scotbed.workloads.runner import WorkloadError, WorkloadSession

        self.session = WorkloadSession(plan_path, self.run_dir, workers=self.workers)
        try:
            self.session.start()
        except WorkloadError as e:
            raise WorkloadFailed(f"subscribe: {e}") from None
        for name, proc in [("locust-master", self.session.master)] + [
            (f"locust-worker-{k}", p) for k, p in enumerate(self.session.worker_procs)
        ]:
            if proc is not None:
                self.state.add_process(proc.pid, name)
        deadline = time.monotonic() + timeout_s
        while True:
            self.check_brokers()
            st = self.session.status()
            if st.get("phase") == "failed":
                raise WorkloadFailed(f"subscribe: workload failed: {st.get('error')}")
            if st.get("phase") not in ("starting", "subscribing"):
                return int(st.get("acked", total))
            self.check_processes("subscribe")
            ph.update(f"{st.get('acked', 0)}/{total} subscriptions acknowledged")
            if time.monotonic() > deadline:
                acked = f"{st.get('acked', 0)}/{total} subscriptions acknowledged"
                raise WorkloadFailed(f"subscribe: {acked} within {timeout_s:g} s")
            time.sleep(0.1)

    def check_processes(self, phase: str) -> None:
        """Fail, naming it, when the Locust master or a worker ended or froze before the workload did."""
        procs = [("the Locust master", "master", self.session.master)]
        procs += [(f"Locust worker {k}", f"worker-{k}", p) for k, p in enumerate(self.session.worker_procs)]
        for name, out, proc in procs:
            why = procwatch.problem(proc) if proc is not None else None
            if why is not None:
                log = self.run_dir / contract.LOCUST_DIR / f"{out}.out"
                raise WorkloadFailed(f"{phase}: {name} (pid {proc.pid}) {why}; see {log}")

    def release(self) -> None:
        """Let the publishers start (the workload's ``file`` release)."""
        self.session.release()

    def watch(
        self, timeout_s: float, ph: Phase, on_status: Callable[[Mapping[str, Any]], None] | None = None
    ) -> None:
        """Follow the master until the last publication (phase ``draining``), failing on a workload
        error or the timeout; the phase's last word is the state it ended in. ``on_status`` gets the
        workload's status at every poll (the live figures)."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.check_brokers()
            st = self.session.status()
            if st.get("phase") == "failed":
                raise WorkloadFailed(f"publish: workload failed: {st.get('error')}")
            if st.get("phase") in ("draining", "done"):
                ph.update(clients_done(st))
                return
            self.check_processes("publish")
            ph.update(f"{st.get('phase', 'starting')}: {clients_done(st)}")
            if on_status is not None:
                on_status(st)
            if time.monotonic() > deadline:
                raise WorkloadFailed(f"publish: the workload did not end within {timeout_s:g} s")
            time.sleep(0.25)
        ph.update(f"the Locust master exited; {clients_done(self.session.status())}")

    def wait(self, timeout_s: float) -> Any:
        """The processes' end and what they wrote (:class:`scotbed.workloads.runner.WorkloadResult`)."""
        from scotbed.workloads.runner import WorkloadError

        try:
            return self.session.wait(timeout_s=timeout_s)
        except WorkloadError as e:
            raise WorkloadFailed(f"drain: {e}") from None

    def drain(self, admin_addresses: Mapping[str, str], deadline_s: float, ph: Phase) -> dict[str, Any]:
        """Keep the subscribers connected until every broker is quiescent or ``deadline_s`` passed;
        write the drain record (:data:`scotbed.contract.DRAIN`), then let the subscribers go."""
        from scotbed.broker.fleet import Unanswered, routing_errors, status_all, wait_quiescent

        start = time.monotonic()
        series: list[tuple[float, int]] = []

        def on_poll(replies: Mapping[str, Any]) -> None:
            self.check_brokers()
            self.check_processes("drain")
            if (errors := routing_errors(replies)) is not None:
                raise WorkloadFailed(f"drain: {errors}")
            series.append((round(time.monotonic() - start, 3), backlog(replies)))
            done = sum(1 for r in replies.values() if r.quiescent)
            peak = max(b for _, b in series)
            ph.update(f"backlog {series[-1][1]} (peak {peak}), {done}/{len(replies)} brokers quiescent")

        try:
            last = asyncio.run(wait_quiescent(admin_addresses, deadline_s, stable_s=0.3, on_poll=on_poll))
            quiescent = True
        except TimeoutError:
            try:
                last = asyncio.run(status_all(admin_addresses))
            except Unanswered as e:
                raise WorkloadFailed(f"drain: {e}") from None
            quiescent = False
        except Unanswered as e:
            raise WorkloadFailed(f"drain: {e}") from None
        delivered = sum(int(r.counters.get(contract.DELIVER, 0)) for r in last.values())
        received = self._wait_for_subscribers(delivered, start + deadline_s, ph) if quiescent else 0
        record = {
            "deadline_s": deadline_s,
            "quiescent": quiescent,
            "elapsed_s": round(time.monotonic() - start, 3),
            "backlog_at_stop": backlog(last),
            "peak_backlog": max((b for _, b in series), default=0),
            "series": series[:: max(1, len(series) // 500)],
            "delivered": delivered,
            "received": received,
        }
        (self.run_dir / contract.DRAIN).write_text(json.dumps(record) + "\n")
        self.session.stop_draining()
        return record

    def _wait_for_subscribers(self, delivered: int, deadline: float, ph: Phase) -> int:
        """After the brokers went quiescent: until the subscribers have read what the brokers delivered
        (an overloaded Locust worker reads its streams late); returns the deliveries they read."""
        catch_up = SubscriberCatchUp()
        while True:
            self.check_processes("drain")
            received = int(self.session.status().get("received", 0))
            now = time.monotonic()
            if catch_up.done(delivered, received, now) or now >= deadline:
                return received
            ph.update(f"brokers quiescent; subscribers have read {received}/{delivered} deliveries")
            time.sleep(0.1)


class SubscriberCatchUp:
    """Have the subscribers read what the brokers delivered? Yes when the count they report reaches
    the brokers' ``deliver`` count, or when it stops growing for ``stall_s``: a stream an
    unsubscription cancelled never reads what was in flight to it, so the counts need not meet."""

    def __init__(self, stall_s: float = 2.0) -> None:
        self.stall_s = stall_s
        self._last = -1
        self._since = 0.0

    def done(self, delivered: int, received: int, now: float) -> bool:
        if received >= delivered:
            return True
        if received != self._last:
            self._last, self._since = received, now
            return False
        return now - self._since >= self.stall_s


def clients_done(status: Mapping[str, Any]) -> str:
    """How many publishers and subscribers have finished, from the workload's status file."""
    return (
        f"{status.get('publishers_done', 0)}/{status.get('publishers', '?')} publishers and "
        f"{status.get('subscribers_done', 0)}/{status.get('subscribers', '?')} subscribers done"
    )


def backlog(replies: Mapping[str, Any]) -> int:
    """Notifications and subscriptions not yet through: every broker's input and output queue lengths,
    and the envelopes its links sent but the neighbours have not acknowledged (in flight, or held
    by an emulated latency)."""
    return sum(r.input_len + sum(x.output_len + x.unacked for x in r.links) for r in replies.values())
