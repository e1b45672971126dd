"""Broker processes on 127.0.0.1: the default backend, which works anywhere Python does.

Event logs are written straight into the run directory's ``events/``; the
broker processes' stdout/stderr go to ``logs/``. Every process is recorded in
the run's state file as soon as it starts, so `scotbed down` can remove it
even when the orchestrator itself was killed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scotbed.broker.launcher import LaunchError, LocalCluster
from scotbed.orchestrator import procwatch
from scotbed.orchestrator.backends import capacity
from scotbed.orchestrator.backends.base import BackendDefaults, BackendError, DeployRequest
from scotbed.orchestrator.backends.host_workload import HostWorkload
from scotbed.orchestrator.plan import Addressing
from scotbed.orchestrator.state import RunState
from scotbed.vinifera.process.launch import Launcher, LocalLauncher

#: the launcher picks each broker's port and writes its log into the run's events/
LOCAL_ADDRESSING = Addressing(dial="127.0.0.1:0", listen="127.0.0.1:0")


class LocalDeployment(HostWorkload):
    def __init__(self, cluster: LocalCluster, request: DeployRequest) -> None:
        self.cluster = cluster
        self.request = request

    @property
    def admin_addresses(self) -> dict[str, str]:
        return self.cluster.addresses()

    @property
    def client_addresses(self) -> dict[str, str]:
        return self.cluster.addresses()

    @property
    def metrics_addresses(self) -> dict[str, str]:
        return self.cluster.metrics_addresses()

    @property
    def fault_target(self) -> LocalCluster:
        """What the fault timeline kills, stops and restarts (scotbed.orchestrator.faults)."""
        return self.cluster

    def dead(self) -> dict[str, str]:
        """Brokers that ended (how, and their last stderr lines) or are frozen (stopped by a signal)."""
        out = {}
        for bid, b in self.cluster.brokers.items():
            why = "never started" if b.proc is None else procwatch.problem(b.proc)
            if why is not None:
                tail = "" if b.alive() else b.stderr_tail(3).strip().replace("\n", " | ")
                out[bid] = why + (f": {tail}" if tail else "")
        return out

    def collect(self, events_dir: Path) -> list[Path]:
        return sorted(events_dir.glob("b-*.jsonl*"))

    def teardown(self) -> None:
        self.cluster.stop()


class LocalBackend(BackendDefaults):
    """Broker processes on this host; what they leave, ``scotbed down`` stops by the recorded pids."""

    @classmethod
    def from_options(cls, options: Any, progress: Any) -> LocalBackend:
        return cls()

    def addressing(self, run_id: str) -> Addressing:
        return LOCAL_ADDRESSING

    def peer_launcher(self, run_id: str, image: str, state: RunState, ready_timeout_s: float) -> Launcher:
        """Peer processes on this host."""
        return LocalLauncher()

    def deploy(self, request: DeployRequest) -> LocalDeployment:
        capacity.require(len(request.configs))
        cluster = LocalCluster(
            request.configs,
            request.run_dir,
            ready_timeout_s=request.ready_timeout_s,
            on_start=lambda bid, pid: request.state.add_process(pid, f"broker:{bid}"),
        )
        try:
            cluster.start()
        except LaunchError as e:
            raise BackendError(str(e)) from None
        return LocalDeployment(cluster, request)
