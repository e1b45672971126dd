"""Host-side script driving: a scripted scenario (docs/design.md §8) played from this host.

The sibling of :mod:`.locust_driver` for ``workload: {script: FILE}``: the run lifecycle
(:mod:`scotbed.orchestrator.run`) chooses it where it chooses the workload driver; this module
plays the script's operations over the deployment's admin addresses (a broker serves clients and
Admin on one port), each followed by its settle. Failures are :class:`.WorkloadFailed` with the
phase first (``script: ...``); the lifecycle adds the run directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scotbed.orchestrator.locust_driver import HostDriver, WorkloadFailed
from scotbed.orchestrator.progress import Phase
from scotbed.workloads.script import Script


class HostScript(HostDriver):
    """One run's script session (:class:`scotbed.workloads.script_runner.ScriptSession`)."""

    def play(
        self, script: Script, addresses: Mapping[str, str], settle_s: float, timeout_s: float, ph: Phase
    ) -> Any:
        """Every operation in file order, each settled; the result counts the client events."""
        from scotbed.broker.fleet import Unanswered
        from scotbed.workloads.script_runner import ScriptFailed, ScriptSession

        self.session = ScriptSession(
            script,
            addresses,
            self.run_dir,
            settle_timeout_s=settle_s,
            on_poll=lambda _: self.check_brokers(),
            on_op=lambda op: ph.update(op.describe()),
        )
        try:
            return self.session.run(timeout_s)
        except (ScriptFailed, Unanswered) as e:
            raise WorkloadFailed(f"script: {e}") from None
