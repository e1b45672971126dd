"""``--backend sim``: the spec's brokers in virtual time, in this process (docs/design.md §11).

The deployment holds the rendered broker configs and, when the run hands it the workload, plays the
whole run on the time model (:mod:`.network`) with the plan's or the script's clients (:mod:`.clients`),
writing the same run directory as a run of broker processes: one event log per broker and one of
the clients, with virtual ``ts_ns``, the workload files and the drain record. Nothing is started, so
there is nothing to collect, tear down or leave behind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from scotbed import contract
from scotbed.broker.eventlog import EventLog
from scotbed.config import BrokerConfig
from scotbed.experiment.spec_faults import FaultSpec
from scotbed.experiment.spec_peers import MAX_SIMULATED_PEERS
from scotbed.orchestrator import provenance
from scotbed.orchestrator.backends.base import BackendDefaults, BackendError, DeployRequest, WorkloadRun
from scotbed.orchestrator.backends.sim import calibration
from scotbed.orchestrator.backends.sim.calibration import NONE as NO_COST
from scotbed.orchestrator.backends.sim.calibration import HostCost
from scotbed.orchestrator.backends.sim.clients import (
    PROCESS,
    SCRIPT_PROCESS,
    Clients,
    PlanDriver,
    ScriptDriver,
)
from scotbed.orchestrator.backends.sim.clock import Clock
from scotbed.orchestrator.backends.sim.network import Network
from scotbed.orchestrator.plan import Addressing
from scotbed.workloads.plan import Plan
from scotbed.workloads.records import ProcessRecords, merge_workload
from scotbed.workloads.script import Script

#: client lines held before a write: a simulated run's clients are written as they happen, not kept
RECORDS_BUFFERED = 4096
#: nothing is dialled; a placeholder address passes every config check
SIM_ADDRESSING = Addressing(dial="{id}:1", listen="{id}:1")


class SimBackend(BackendDefaults):
    """Brokers in virtual time, with the whole fault timeline of a generated workload: link faults, and a
    broker killed, stopped and restarted as a broker process is (:mod:`.network`: state and sessions
    lost, the neighbours' resends and replays; :mod:`.clients`: the sessions opened again). Peers
    (Vinifera) run in the round simulator (:func:`scotbed.vinifera.run.simulate_peers`), up to
    :data:`~scotbed.experiment.spec_peers.MAX_SIMULATED_PEERS`. No self-organising overlays, and no
    fault timeline with a scripted workload."""

    supports_faults: ClassVar[bool] = True
    virtual_time: ClassVar[bool] = True
    max_peers: ClassVar[int] = MAX_SIMULATED_PEERS

    def __init__(self, cost: HostCost = NO_COST) -> None:
        self.cost = cost

    @classmethod
    def from_options(cls, options: Any, progress: Any) -> SimBackend:
        """The backend with the host cost of ``options.calibration`` (from ``scotbed calibrate``), if any."""
        path = getattr(options, "calibration", None)
        return cls(calibration.load(path) if path is not None else NO_COST)

    @classmethod
    def refuses(cls, spec: Any) -> str | None:
        if spec.faults and spec.workload.script is not None:
            return "runs a fault timeline with a generated workload only (its times count from the release)"
        if spec.topology.self_organising is not None:
            return (
                "runs no self-organising overlay yet; its simulator is scotbed.selforg.sim "
                "(benchmarks/selforg.py)"
            )
        return None

    def addressing(self, run_id: str) -> Addressing:
        return SIM_ADDRESSING

    def deploy(self, request: DeployRequest) -> SimDeployment:
        return SimDeployment(request.configs, request.run_dir, self.cost)


@dataclass(frozen=True)
class Played:
    """What a simulated run did, for its progress line and its drain record."""

    steps: int  # callbacks the event loop ran
    virtual_s: float
    received: int
    drain_ns: int  # from the last publication to the last event
    counts: dict[str, int]  # a script's operations by kind

    def describe(self) -> str:
        ops = "".join(f", {v} {k}" for k, v in sorted(self.counts.items()))
        return f"{self.steps} timed steps in {self.virtual_s:.1f} virtual s, {self.received} received{ops}"


class SimDeployment:
    """The run's brokers as configs, until :meth:`run_workload` plays the run in virtual time."""

    def __init__(self, configs: list[BrokerConfig], run_dir: Path, cost: HostCost = NO_COST) -> None:
        self.configs = configs
        self.run_dir = run_dir
        self.cost = cost

    @property
    def admin_addresses(self) -> dict[str, str]:
        return {}

    @property
    def client_addresses(self) -> dict[str, str]:
        return {c.id: c.listen for c in self.configs}

    @property
    def metrics_addresses(self) -> dict[str, str]:
        return {}

    @property
    def fault_target(self) -> Any:
        raise BackendError("the sim backend applies the fault timeline itself, in virtual time")

    def dead(self) -> dict[str, str]:
        return {}

    def run_workload(self, run: WorkloadRun) -> None:
        """The whole run, from the first subscription to the last delivery, in virtual time."""
        with run.progress.phase("simulate") as ph:
            provenance.record(self.run_dir, "sim_calibration", self.cost.to_json())
            plan = run.plan("file") if run.script is None else None
            played = self._play(run.spec.seed, plan, run.script, list(run.spec.faults or []))
            merge_workload(self.run_dir)
            self._drain_record(played.received, played.drain_ns)
            run.measured()
            ph.update(played.describe())

    def _play(self, seed: int, plan: Plan | None, script: Script | None, faults: list[FaultSpec]) -> Played:
        """Play the plan or the script on the time model, every log written and closed."""
        clock = Clock()
        logs = {c.id: EventLog(c.id, str(self.run_dir / contract.events_file(c.id))) for c in self.configs}
        net = Network(self.configs, clock, lambda node: logs[node].emit_at, seed, self.cost)
        process = SCRIPT_PROCESS if script is not None else PROCESS
        records = ProcessRecords(self.run_dir, process, max_buffered=RECORDS_BUFFERED)
        clients = Clients(net, records)
        try:
            counts = ScriptDriver(script, clients, self.run_dir).run() if script is not None else {}
            if plan is not None:
                PlanDriver(plan, clients, faults, self.run_dir / contract.FAULTS).run()
            clock.run(until_ns=clock.now_ns + net.sample_ns)  # the samples of the last period
        finally:
            records.close()
            for log in logs.values():
                log.close()
        drain_ns = clock.now_ns - (clients.last_publish_ns or clock.now_ns)
        return Played(clock.handled, clock.seconds(), records.receives, drain_ns, counts)

    def _drain_record(self, received: int, elapsed_ns: int) -> None:
        """The drain ends when nothing is left to run: quiescent, with no backlog."""
        record = {
            "deadline_s": 0.0,
            "quiescent": True,
            "elapsed_s": round(elapsed_ns / 1e9, 3),
            "backlog_at_stop": 0,
            "peak_backlog": 0,
            "series": [],
            "delivered": received,
            "received": received,
        }
        (self.run_dir / contract.DRAIN).write_text(json.dumps(record) + "\n")

    def collect(self, events_dir: Path) -> list[Path]:
        return sorted(events_dir.glob("b-*.jsonl"))

    def teardown(self) -> None:
        return None
