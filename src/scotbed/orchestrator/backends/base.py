"""The seam between the run lifecycle and where brokers actually run.

A backend turns broker configs into running brokers and back into files:
``deploy`` starts them and returns a :class:`Deployment`, which owns everything the run then does
with them: the addresses the orchestrator (admin, health) and the workload (clients) dial, the
workload itself (:meth:`Deployment.run_workload`: on the host or next to the brokers, the backend's
business), the fault timeline's hands (:attr:`Deployment.fault_target`), which brokers have died,
copying event logs into the run directory, and removing everything it started. The run lends a
workload runner what it needs through :class:`WorkloadRun`; backends never import the lifecycle.

A backend's class declares what it can do (:class:`BackendClass`, with the defaults of
:class:`BackendDefaults`); the registry (:mod:`scotbed.orchestrator.backends`) maps names to classes.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from scotbed.config import BrokerConfig
from scotbed.errors import ScotbedError
from scotbed.experiment.spec_peers import MAX_PEER_PROCESSES
from scotbed.orchestrator.images import BROKER_IMAGE
from scotbed.orchestrator.plan import Addressing
from scotbed.orchestrator.state import RunState

if TYPE_CHECKING:
    from scotbed.vinifera.process.launch import Launcher


class BackendError(ScotbedError, RuntimeError):
    """A backend could not do what the run asked; the message names the broker or resource."""


@dataclass
class DeployRequest:
    """Everything a backend deploys: it never sees the spec or the overlay."""

    run_id: str
    run_dir: Path
    configs: list[BrokerConfig]  # rendered with the backend's addressing (Backend.addressing)
    ready_timeout_s: float
    state: RunState
    image: str = BROKER_IMAGE
    options: dict[str, str] = field(default_factory=dict)
    nodes_needed: int = 1  # nodes that keep every broker off its neighbours' nodes (Scot.chromatic_need)


#: who releases the publishers: ``file`` the orchestrator, ``auto`` the Locust master once every broker
#: is quiescent (:class:`scotbed.workloads.plan.ReleaseSpec`)
ReleaseMode = Literal["auto", "file"]


class WorkloadRun(Protocol):
    """What the run lends its deployment's workload runner: the spec, the run's files and progress, and
    the run's own barriers and checks (each raises the run's failure when it does not pass)."""

    spec: Any  # the run's Spec: timeouts, faults
    script: Any  # the spec's scripted scenario (Script); None for a generated workload. A backend that
    # plays scripts itself (``virtual_time``) gets it here; the others' scripts are played from the host
    run_id: str
    run_dir: Path
    state: RunState
    progress: Any  # Progress: the runner's phases
    options: Any  # RunOptions: workers, workload_image, pod_cpu

    def plan(self, release_mode: ReleaseMode) -> Any:
        """The workload plan, with the clients placed at the deployment's client addresses, written to
        ``workload/plan.json``."""
        ...

    def check_brokers(self) -> None:
        """Fail the run when a broker died outside the fault timeline or the timeline failed."""
        ...

    def wait_quiescent(self, timeout_s: float, ph: Any) -> None:
        """Wait until every broker's queues are empty and its counters stable."""
        ...

    def live_admin_addresses(self) -> dict[str, str]:
        """The brokers a drain asks: after the fault in progress, without those left down on purpose."""
        ...

    def measured(self) -> None:
        """The measurement window has closed (the drain has ended): the run may start what it does after
        the workload (its analysis's JVM) beside the phases still to come."""
        ...

    def started(self, *, driver: Any = None, injector: Any = None) -> None:
        """Hand the run a workload driver or fault injector its cleanup must stop, however it ends."""
        ...


class Deployment(Protocol):
    @property
    def admin_addresses(self) -> dict[str, str]:
        """broker id -> host:port the orchestrator reaches (health, Admin)."""
        ...

    @property
    def client_addresses(self) -> dict[str, str]:
        """broker id -> host:port the workload's clients dial."""
        ...

    @property
    def metrics_addresses(self) -> dict[str, str]:
        """broker id -> host:port of its Prometheus endpoint, where the brokers run (loopback for local
        processes, the run's network for containers); empty unless the spec has metrics on."""
        ...

    @property
    def fault_target(self) -> Any:
        """What the fault timeline kills, stops and restarts (:class:`scotbed.orchestrator.faults.Target`)."""
        ...

    def dead(self) -> dict[str, str]:
        """Brokers that stopped running, with the reason (exit code, last log lines)."""
        ...

    def run_workload(self, run: WorkloadRun) -> None:
        """Run the generated workload from subscribing to the end of the drain, with the spec's fault
        timeline; raises :class:`~scotbed.orchestrator.locust_driver.WorkloadFailed` when the workload
        fails. Where the clients run (host processes, in-cluster Jobs) is the backend's business."""
        ...

    def collect(self, events_dir: Path) -> list[Path]:
        """Copy every broker's event log into ``events_dir`` (a no-op where logs already land there)."""
        ...

    def teardown(self) -> None:
        """Remove everything the deployment started; safe to call twice."""
        ...


class Backend(Protocol):
    name: str

    def addressing(self, run_id: str) -> Addressing:
        """How this backend's brokers dial, bind and log; the run renders the configs with it."""
        ...

    def deploy(self, request: DeployRequest) -> Deployment: ...

    def peer_launcher(self, run_id: str, image: str, state: RunState, ready_timeout_s: float) -> Launcher:
        """Where a ``topology: {kind: peers}`` run starts its peer processes."""
        ...


class BackendClass(Protocol):
    """A registered backend class: how a run makes one, and what it declares it can do."""

    name: str  # set by the registry
    supports_faults: bool  # its deployments have a fault_target (spec ``faults:``)
    renders: bool  # ``scotbed render --target NAME`` writes its files (:meth:`render`)
    sweeps_unasked: bool  # ``scotbed down`` without ``--backend`` sweeps its unrecorded leftovers
    virtual_time: bool  # runs the brokers in virtual time: no processes, the deployment plays any workload
    max_peers: int  # the most peers (topology.n of a peers run) it runs

    def refuses(self, spec: Any) -> str | None:
        """Why this backend cannot run ``spec`` (a sentence after the backend's name), or None."""
        ...

    def from_options(self, options: Any, progress: Any) -> Backend:
        """The backend for a run's options (:class:`~scotbed.orchestrator.run.RunOptions`) and progress."""
        ...

    def render(self, args: Any, spec: Any, scot: Any, run_id: str, out: Path) -> int:
        """``scotbed render``: write what a run would deploy into ``out``; the exit code. Bad arguments
        raise :class:`BackendError`."""
        ...

    def down_run(self, state: RunState) -> list[str]:
        """``scotbed down`` of one recorded run: remove what it left (beyond its processes); report lines."""
        ...

    def sweep(self, run_id: str | None) -> list[str]:
        """``scotbed down``: remove what carries scotbed's labels (of ``run_id``) but no state file
        records; report lines."""
        ...


class BackendDefaults:
    """The capabilities of a backend class that declares nothing else (see :class:`BackendClass`)."""

    name: ClassVar[str] = ""
    supports_faults: ClassVar[bool] = True
    renders: ClassVar[bool] = False
    sweeps_unasked: ClassVar[bool] = False
    virtual_time: ClassVar[bool] = False
    #: peer processes on this host (or its containers): more is the simulator's job (``--backend sim``)
    max_peers: ClassVar[int] = MAX_PEER_PROCESSES
    #: "module:function" that makes a peers run's launcher, called as ``(backend, run_id, image, state,
    #: ready_timeout_s)``; named rather than imported because a launcher module builds on its backend's
    peers: ClassVar[str] = ""

    def peer_launcher(self, run_id: str, image: str, state: RunState, ready_timeout_s: float) -> Launcher:
        if not self.peers:
            raise BackendError(f"the {self.name} backend runs no peers")
        module, function = self.peers.split(":")
        launcher: Launcher = getattr(importlib.import_module(module), function)(
            self, run_id, image, state, ready_timeout_s
        )
        return launcher

    @classmethod
    def refuses(cls, spec: Any) -> str | None:
        return None

    @classmethod
    def render(cls, args: Any, spec: Any, scot: Any, run_id: str, out: Path) -> int:
        raise BackendError(f"the {cls.name} backend deploys nothing to render")

    @classmethod
    def down_run(cls, state: RunState) -> list[str]:
        return []

    @classmethod
    def sweep(cls, run_id: str | None) -> list[str]:
        return []
