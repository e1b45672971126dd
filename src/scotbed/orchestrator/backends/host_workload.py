"""The workload of a deployment whose clients run on the orchestrator's host (local processes, compose
containers with published ports): Locust master and workers as local processes
(:mod:`scotbed.orchestrator.locust_driver`). The orchestrator releases the publishers once every
subscription is acknowledged and every broker is quiescent, and starts the fault timeline at that
release.
"""

from __future__ import annotations

from typing import Any

from scotbed import contract
from scotbed.orchestrator import faults
from scotbed.orchestrator.backends.base import ReleaseMode, WorkloadRun
from scotbed.orchestrator.liveview import live_figures
from scotbed.orchestrator.locust_driver import HostLocust

#: the plan's release mode: the orchestrator releases the publishers (:meth:`HostLocust.release`)
RELEASE: ReleaseMode = "file"


class HostWorkload:
    """The workload side of a deployment whose clients run on the host; the class mixes into it."""

    admin_addresses: Any
    fault_target: Any

    def run_workload(self, run: WorkloadRun) -> None:
        """subscribe → quiescent → publish (with the fault timeline) → drain, each a phase of ``run``."""
        spec = run.spec
        locust = HostLocust(run.run_dir, run.state, run.options.workers, run.check_brokers)
        run.started(driver=locust)
        with run.progress.phase("subscribe") as ph:
            plan = run.plan(RELEASE)
            n = locust.start(
                run.run_dir / contract.PLAN, plan.subscription_count(), spec.timeouts.quiescent_s, ph
            )
            ph.update(f"{n} subscriptions acknowledged")

        with run.progress.phase("quiescent") as ph:
            run.wait_quiescent(spec.timeouts.quiescent_s, ph)

        addresses, expected = self.admin_addresses, plan.publication_count()
        with (
            run.progress.phase("publish") as ph,
            live_figures(run.progress, ph, addresses, expected) as on_status,
        ):
            locust.release()
            run.started(injector=faults.inject(spec, self, run.run_dir))
            locust.watch(spec.timeouts.run_s, ph, on_status)

        with run.progress.phase("drain") as ph:
            record = locust.drain(run.live_admin_addresses(), spec.timeouts.drain_s, ph)
            run.measured()
            if not record["quiescent"]:
                run.progress.warn(
                    f"drain: backlog {record['backlog_at_stop']} still queued after "
                    f"timeouts.drain_s={spec.timeouts.drain_s:g} s; counted as undelivered at stop"
                )
            result = locust.wait(spec.timeouts.run_s)
            ph.update(
                f"{result.events.get('publish', 0)} published, {result.events.get('receive', 0)} received"
            )
