"""`scotbed run`: one command from spec to report (docs/design.md §3, §5).

The lifecycle, every barrier with a timeout (spec ``timeouts``) and an error
that names who did not pass it::

    validate → topology → render → deploy → ready → subscribe → quiescent
    → publish → drain → collect → teardown → analyse → report (``--keep``: no teardown;
    the brokers go before the analysis, which then reads finished logs on a quiet host)

A broker that dies at any point after ``ready`` fails the run with its name
and last log lines. Ctrl-C and SIGTERM tear down and keep what was collected.
The run directory survives every failure; the run state file (see
:mod:`scotbed.orchestrator.state`) survives a crash of the orchestrator
itself, so ``scotbed down`` can remove what was started.

Exit codes: 0 the run finished, the analysis ran and the correctness checks
held; 1 the run finished but a check failed (missing, duplicate or
false-positive deliveries); 2 the spec or the command is wrong; 3 the run
failed (a barrier timed out, a broker died, the workload failed); 4 the
drain deadline (``timeouts.drain_s``) ended the run with deliveries still
queued, none lost otherwise; 5 (``--require-valid`` only) the run was correct
but host-bound (:func:`scotbed.analysis.validity.exit_status`); 130/143 interrupted.
"""

from __future__ import annotations

import contextlib
import json
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.analysis import faultwindows, unreadable
from scotbed.analysis.rundir import RunDir
from scotbed.experiment import spec_peers
from scotbed.experiment.spec import Spec, SpecError, build_scot, load_spec
from scotbed.orchestrator import faults, interrupts, preflight, schedule, security
from scotbed.orchestrator import plan as deploy_plan
from scotbed.orchestrator.backends import backend_class, make_backend
from scotbed.orchestrator.backends.base import Backend, BackendError, Deployment, DeployRequest, ReleaseMode
from scotbed.orchestrator.images import BROKER_IMAGE, WORKLOAD_IMAGE
from scotbed.orchestrator.locust_driver import HostLocust, WorkloadFailed
from scotbed.orchestrator.outdir import writable_dir, write_topology
from scotbed.orchestrator.progress import Phase, Progress, make_progress
from scotbed.orchestrator.provenance import record_java, resolved_spec_text
from scotbed.orchestrator.script_driver import HostScript
from scotbed.orchestrator.scripted import load_script
from scotbed.orchestrator.spark_start import SessionStart, analysed
from scotbed.orchestrator.state import RunState
from scotbed.workloads.script import Script


class RunFailed(RuntimeError):
    """The run did not finish; ``run_dir`` keeps what was collected."""

    def __init__(self, message: str, run_dir: Path | None = None) -> None:
        super().__init__(message)
        self.run_dir = run_dir


class Terminated(BaseException):
    """SIGTERM arrived; like KeyboardInterrupt, it unwinds through every cleanup."""


@dataclass
class RunOptions:
    backend: str | None = None  # None: the spec's
    out: Path = Path("runs")
    keep: bool = False  # leave the brokers running (and the state file) after the run
    quiet: bool = False
    verbose: bool = False  # the analysis's JVM and Spark write to the terminal, not analysis/spark.log
    log_json: bool = False
    require_valid: bool = False  # a host-bound run exits 5
    image: str | None = None
    workload_image: str = WORKLOAD_IMAGE  # k8s: the Locust Jobs' image (broker image + workloads)
    kube_context: str | None = None
    namespace_prefix: str | None = None  # k8s: None: the renderer's (backends.k8s.render.NAMESPACE_PREFIX)
    preferred_anti_affinity: bool = False
    pod_cpu: str | None = None  # k8s: CPU request of broker and Locust pods (None: their defaults)
    spark_master: str | None = None
    workers: int = 2  # Locust worker processes
    analyse: bool = True
    run_dir_name: str | None = None  # the run directory under ``out`` (None: the run id; a campaign's cell)
    calibration: Path | None = None  # sim: a ``scotbed calibrate`` file, the host cost its delays add


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    summary: dict[str, Any] = field(default_factory=dict)
    ok: bool = False
    verdict: str = ""


class SignalGuard:
    """Turns SIGTERM into :class:`Terminated` in the main thread for the duration of a run."""

    def __enter__(self) -> SignalGuard:
        self._old = signal.getsignal(signal.SIGTERM)
        self._old_int = signal.getsignal(signal.SIGINT)

        def handler(signum: int, frame: Any) -> None:
            interrupts.note(signum)
            raise Terminated()

        def int_handler(signum: int, frame: Any) -> None:
            interrupts.note(signum)
            raise KeyboardInterrupt

        try:
            signal.signal(signal.SIGTERM, handler)
            if self._old_int is signal.default_int_handler:
                signal.signal(signal.SIGINT, int_handler)
            self._installed = True
        except ValueError:  # not the main thread: leave signals alone
            self._installed = False
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGTERM, self._old)
            signal.signal(signal.SIGINT, self._old_int)


class Lifecycle:
    """One run: holds what was started so every exit path can collect and tear it down."""

    def __init__(self, spec_path: Path, sets: list[str], options: RunOptions, progress: Progress) -> None:
        self.spec_path = spec_path
        self.sets = sets
        self.options = options
        self.progress = progress
        self.deployment: Deployment | None = None
        self.driver: HostLocust | HostScript | None = None  # the workload driver on this host
        self.run_dir: Path | None = None
        self.state: RunState | None = None
        self.collected = False
        self.injector: faults.Injector | None = None
        self.spark: SessionStart | None = None  # the analysis's session, started after publishing
        self.plan: Any = (
            None  # the workload plan, built once (render), placed at the clients' addresses later
        )

    # --- phases ---------------------------------------------------------------------------

    def _validated(self) -> tuple[Spec, str, Backend]:
        """The spec, its backend's name and the backend, every check passed before anything is made."""
        with self.progress.phase("validate") as ph:
            spec = load_spec(self.spec_path, self.sets)
            backend_name = preflight.check(spec, self.options.backend, with_workload=False).backend
            if self.options.calibration is not None and not backend_class(backend_name).virtual_time:
                raise SpecError(
                    f"--calibration: only a backend in virtual time (sim) takes one, not {backend_name}"
                )
            backend = make_backend(backend_name, self.options, self.progress)
            ph.update(f"{spec.name}: routing {spec.routing}, backend {backend_name}")
        return spec, backend_name, backend

    def _make_run_dir(self, spec: Spec, run_id: str, backend_name: str) -> Path:
        """The run directory with its resolved spec, and the state file that records it."""
        self.run_dir = run_dir = (self.options.out / (self.options.run_dir_name or run_id)).resolve()
        for sub in contract.RUN_DIRS:
            (run_dir / sub).mkdir(parents=True, exist_ok=True)
        (run_dir / contract.SPEC_RESOLVED).write_text(
            resolved_spec_text(spec, run_id, backend_name, self.sets)
        )
        self.state = RunState(run_id, backend_name, str(run_dir))
        self.state.save()
        self.progress.info(f"run directory: {run_dir}")
        return run_dir

    def run(self) -> RunResult:
        spec, backend_name, backend = self._validated()
        run_id = deploy_plan.make_run_id(spec.name)
        run_dir = self._make_run_dir(spec, run_id, backend_name)
        assert self.state is not None
        if spec.topology.kind == spec_peers.PEERS:
            from scotbed.vinifera.run import run_peers, simulate_peers

            if backend_class(backend_name).virtual_time:
                return RunResult(run_id, run_dir, *simulate_peers(spec, run_dir, self.progress))
            image = self.options.image or BROKER_IMAGE
            launcher = backend.peer_launcher(run_id, image, self.state, spec.timeouts.ready_s)
            return RunResult(run_id, run_dir, *run_peers(spec, run_dir, self.progress, launcher))

        with self.progress.phase("topology") as ph:
            scot = build_scot(spec)
            write_topology(run_dir, scot)
            s = scot.summary()
            ph.update(
                f"{s['brokers']} brokers, {s['clusters']} clusters, {s['regions']} regions, "
                f"{s['acols']} aCOLs, {s['icols']} iCOLs"
            )

        with self.progress.phase("render") as ph:
            configs = security.with_run_token(
                deploy_plan.deployed_configs(spec, scot, backend.addressing(run_id), run_id)
            )
            script = load_script(spec, scot) if spec.workload.script is not None else None
            if script is not None:
                ph.update(f"{len(configs)} broker configs, {script.summary()}")
            else:
                plan = self.plan = deploy_plan.workload_plan(
                    spec, scot, {c.id: c.listen for c in configs}, run_id=run_id
                )
                ph.update(
                    f"{len(configs)} broker configs, {plan.subscription_count()} subscriptions, "
                    f"{len(plan.publishers)} publishers"
                )

        with self.progress.phase("deploy") as ph:
            ph.update(f"starting {len(configs)} brokers ({backend_name})")
            tls = security.enable(spec, run_dir, configs, run_id) is not None
            if tls:
                ph.update(f"mutual TLS: certificates in {run_dir / security.TLS_DIR}")
            request = DeployRequest(
                run_id=run_id,
                run_dir=run_dir,
                configs=configs,
                ready_timeout_s=spec.timeouts.ready_s,
                state=self.state,
                image=self.options.image or BROKER_IMAGE,
                nodes_needed=scot.chromatic_need(),
            )
            try:
                self.deployment = backend.deploy(request)
            except BackendError as e:
                raise RunFailed(f"deploy: {e}", run_dir) from None
            if spec.metrics.prometheus:  # a local broker's port is known only now
                write_topology(run_dir, scot, self.deployment.metrics_addresses)
            ph.update(f"{len(configs)} brokers started ({backend_name}{', mutual TLS' if tls else ''})")

        with self.progress.phase("ready") as ph:
            self._wait_healthy(spec.timeouts.ready_s, ph)

        if script is not None and not backend_class(backend_name).virtual_time:
            self._workload_scripted(spec, script)
        else:
            try:
                self.deployment.run_workload(_WorkloadRun(self, spec, scot, run_id, script))
            except WorkloadFailed as e:
                raise RunFailed(str(e), self.run_dir) from None

        self._collect_phase()
        if not self.options.keep:  # the analysis reads logs no broker still appends to, on a quiet host
            with self.progress.phase("teardown") as ph:
                self._stop_workload()
                self._teardown(ph)
        lag = schedule.publisher_lag(run_dir / contract.PUBLICATIONS, faultwindows.of_run(run_dir))
        if (late := schedule.warning(lag)) is not None:
            self.progress.warn(late)

        summary: dict[str, Any] = {}
        if self.options.analyse:
            with self.progress.phase("analyse") as ph:
                summary = self._analyse(run_dir, ph)
            summary["publish_schedule"] = lag
            if (run_dir / contract.SUMMARY).exists():  # the analysis wrote it; add what the run knows
                (run_dir / contract.SUMMARY).write_text(json.dumps(summary, indent=2, default=str))
            if (note := unreadable.describe(summary)) is not None:
                self.progress.warn(note)
        ok, verdict = verdict_of(summary) if self.options.analyse else (True, "not analysed")
        return RunResult(run_id, run_dir, summary, ok, verdict)

    def _collect_phase(self) -> None:
        """Collect the logs; the analysis's session starts before, where they are already here, else after."""
        self.start_analysis_session()
        with self.progress.phase("collect") as ph:
            self._collect(ph)
        self.start_analysis_session(collected=True)

    def start_analysis_session(self, collected: bool = False) -> None:
        """Start the analysis's Spark session in the background once the measurement window has closed
        (the drain has ended) and the logs, whose size picks its JVM, are in the run directory: at once
        where the brokers write there (local, compose), else once they are collected. The remaining
        phases (the clients' end, collect, teardown) then hide the JVM's start."""
        if not self.options.analyse or self.spark is not None or self.run_dir is None:
            return
        if collected or RunDir(self.run_dir.resolve()).event_files():
            self.spark = SessionStart(self.run_dir, self.options.spark_master, self.options.verbose)

    def _wait_healthy(self, timeout_s: float, ph: Phase) -> None:
        import asyncio

        from scotbed.broker.health import check

        assert self.deployment is not None
        addresses = self.deployment.admin_addresses

        async def serving(bids: list[str]) -> dict[str, str]:
            replies = await asyncio.gather(*(check(addresses[b], timeout_s=1.0) for b in bids))
            return {b: why for b, (ok, why) in zip(bids, replies, strict=True) if not ok}

        deadline = time.monotonic() + timeout_s
        pending = {b: "not checked" for b in addresses}
        while pending:
            self.check_brokers()
            pending = asyncio.run(serving(sorted(pending)))
            ph.update(f"{len(addresses) - len(pending)}/{len(addresses)} brokers serving")
            if pending and time.monotonic() > deadline:
                names = "; ".join(f"{b} ({why})" for b, why in sorted(pending.items()))
                raise RunFailed(
                    f"ready: {len(pending)} broker(s) not serving within {timeout_s:g} s: {names}",
                    self.run_dir,
                )
            if pending:
                time.sleep(0.2)

    def live_admin_addresses(self, spec: Spec) -> dict[str, str]:
        """The brokers the drain asks: after the fault in progress has finished (a restarted container may
        serve on a new host port), without those the timeline left down on purpose."""
        assert self.deployment is not None
        if self.injector is None:
            return dict(self.deployment.admin_addresses)
        self.injector.wait_applied(spec.timeouts.ready_s)
        down = self.injector.down
        return {b: a for b, a in self.deployment.admin_addresses.items() if b not in down}

    def check_brokers(self) -> None:
        if self.deployment is None:
            return
        if self.injector is not None and self.injector.error:
            raise RunFailed(self.injector.error, self.run_dir)
        down = self.injector.down if self.injector is not None else set()
        dead = {b: why for b, why in self.deployment.dead().items() if b not in down}
        if dead:
            names = "; ".join(f"{b}: {why}" for b, why in sorted(dead.items()))
            raise RunFailed(f"broker(s) stopped during the run: {names}", self.run_dir)

    def plan_workload(self, spec: Spec, scot: Any, run_id: str, release_mode: ReleaseMode) -> Any:
        """The workload plan (written to workload/plan.json) with the clients the orchestrator placed."""
        from scotbed.workloads import plan as wplan

        assert self.deployment is not None and self.run_dir is not None
        addresses = self.deployment.client_addresses
        if self.plan is None:
            self.plan = deploy_plan.workload_plan(spec, scot, addresses, run_id=run_id)
        plan = deploy_plan.with_clients_at(self.plan, addresses, release_mode)
        wplan.write(plan, self.run_dir / contract.PLAN)
        return plan

    def _workload_scripted(self, spec: Spec, script: Script) -> None:
        """The script's operations from this host (:mod:`.script_driver`), each followed by its settle."""
        assert self.deployment is not None and self.run_dir is not None
        driver = self.driver = HostScript(self.run_dir, self.check_brokers)
        with self.progress.phase("script") as ph:
            try:
                result = driver.play(
                    script,
                    self.deployment.admin_addresses,
                    spec.timeouts.quiescent_s,
                    spec.timeouts.run_s,
                    ph,
                )
            except WorkloadFailed as e:
                raise RunFailed(str(e), self.run_dir) from None
            ph.update(", ".join(f"{v} {k}" for k, v in sorted(result.events.items())))

    def wait_quiescent(self, timeout_s: float, ph: Phase) -> None:
        """Every broker's queues empty, every batch acknowledged, counters stable (Admin.Status)."""
        import asyncio

        from scotbed.broker.fleet import Unanswered, routing_errors, wait_quiescent

        assert self.deployment is not None

        def on_poll(replies: Any) -> None:
            self.check_brokers()
            if (errors := routing_errors(replies)) is not None:
                raise RunFailed(errors, self.run_dir)
            done = sum(1 for r in replies.values() if r.quiescent)
            ph.update(f"{done}/{len(replies)} brokers quiescent")

        try:
            asyncio.run(
                wait_quiescent(self.deployment.admin_addresses, timeout_s, stable_s=0.3, on_poll=on_poll)
            )
        except (TimeoutError, Unanswered) as e:
            raise RunFailed(f"quiescence: {e}", self.run_dir) from None

    def _collect(self, ph: Phase | None = None) -> None:
        """Flush every broker's log and copy it into events/; safe after a partial run."""
        if self.collected or self.deployment is None or self.run_dir is None:
            return
        import asyncio

        from scotbed.broker.fleet import flush_all

        alive = {b: a for b, a in self.deployment.admin_addresses.items() if b not in self.deployment.dead()}
        try:
            asyncio.run(flush_all(alive))
        except Exception as e:  # a broker that cannot flush still has what it wrote
            self.progress.warn(f"collect: flush failed: {e}")
        try:
            files = self.deployment.collect(self.run_dir / contract.EVENTS_DIR)
        except BackendError as e:
            raise RunFailed(f"collect: {e}", self.run_dir) from None
        self.collected = True
        if ph is not None:
            ph.update(f"{len(files)} broker event logs")

    def _analyse(self, run_dir: Path, ph: Phase) -> dict[str, Any]:
        ph.update("Spark")
        started, self.spark = self.spark, None
        summary = analysed(started, run_dir, self.options.spark_master, self.options.verbose)
        record_java(run_dir, summary)
        n = summary.get("notifications", {})
        ph.update(
            f"{n.get('delivered', 0)}/{n.get('expected_deliveries', 0)} deliveries, "
            f"{n.get('missing', 0)} missing, {n.get('duplicates', 0)} duplicates, "
            f"{n.get('false_positives', 0)} false positives"
        )
        return summary

    # --- cleanup --------------------------------------------------------------------------

    def cleanup(self, failed: bool) -> None:
        """Stop the workload, collect what a failed run produced, tear down; each step runs even if an
        earlier one (or the progress output: a closed pipe) fails."""
        steps = [("stopping the workload", self._stop_workload)]
        if failed:
            steps.append(("collecting after failure", self._collect_after_failure))
        if self.spark is not None:  # started for an analysis the run did not reach
            steps.append(("stopping Spark", self.spark.stop))
        if not self.options.keep:
            steps.append(("teardown", self._teardown_shown))
        for what, step in steps:
            try:
                step()
            except Exception as e:
                with contextlib.suppress(Exception):
                    self.progress.warn(f"{what}: {e}")
        security.disable()

    def _stop_workload(self) -> None:
        if self.injector is not None:
            self.injector.stop()
        if self.driver is not None:
            self.driver.stop()

    def _collect_after_failure(self) -> None:
        self._collect()
        if self.run_dir is not None and self.driver is not None and self.driver.started:
            from scotbed.workloads.records import merge_workload

            merge_workload(self.run_dir)

    def _teardown_shown(self) -> None:
        """Tear down what a failed or interrupted run left deployed, as a ``teardown`` phase with its mark
        while the output still takes one (a closed pipe does not keep the brokers running)."""
        if self.deployment is None:
            self._teardown()
            return
        with contextlib.ExitStack() as stack:
            ph: Phase | None = None
            with contextlib.suppress(Exception):
                ph = stack.enter_context(self.progress.phase("teardown"))
            self._teardown(ph)

    def _teardown(self, ph: Phase | None = None) -> None:
        """Remove the deployment (``ph``: the phase that shows it) and stop what the state file records."""
        if self.deployment is not None:
            brokers = len(self.deployment.admin_addresses)
            self.deployment.teardown()
            self.deployment = None  # torn down once: before the analysis, or at exit
            if ph is not None:
                ph.update(f"{brokers} brokers and the workload stopped")
        if self.state is not None:
            # an interrupted deploy has no deployment yet, but the processes it started are recorded
            from scotbed.orchestrator.down import stop_processes

            stop_processes(self.state.processes)
            self.state.forget()
            self.state = None


class _WorkloadRun:
    """What a run lends its deployment's workload runner (:class:`~.backends.base.WorkloadRun`)."""

    def __init__(
        self, life: Lifecycle, spec: Spec, scot: Any, run_id: str, script: Script | None = None
    ) -> None:
        assert life.run_dir is not None and life.state is not None
        self.life, self.spec, self.scot, self.run_id = life, spec, scot, run_id
        self.script = script
        self.run_dir, self.state = life.run_dir, life.state
        self.progress, self.options = life.progress, life.options

    def plan(self, release_mode: ReleaseMode) -> Any:
        return self.life.plan_workload(self.spec, self.scot, self.run_id, release_mode)

    def check_brokers(self) -> None:
        self.life.check_brokers()

    def wait_quiescent(self, timeout_s: float, ph: Any) -> None:
        self.life.wait_quiescent(timeout_s, ph)

    def live_admin_addresses(self) -> dict[str, str]:
        return self.life.live_admin_addresses(self.spec)

    def measured(self) -> None:
        self.life.start_analysis_session()

    def started(self, *, driver: Any = None, injector: Any = None) -> None:
        if driver is not None:
            self.life.driver = driver
        if injector is not None:
            self.life.injector = injector


def verdict_of(summary: dict[str, Any]) -> tuple[bool, str]:
    """The verdict of docs/design.md §3, from by the analysis's typed summary (analysis.summary.verdict)."""
    from scotbed.analysis.summary import verdict_of_json

    return verdict_of_json(summary)


@contextmanager
def _lifecycle(
    spec_path: Path, sets: list[str], options: RunOptions, progress: Progress
) -> Iterator[Lifecycle]:
    life = Lifecycle(spec_path, sets, options, progress)
    failed = True
    try:
        yield life
        failed = False
    finally:
        life.cleanup(failed)


def run_spec(
    spec_path: str | Path, sets: list[str], options: RunOptions, progress: Progress | None = None
) -> RunResult:
    """Run one experiment; raises :class:`RunFailed` when it does not finish."""
    progress = progress or make_progress(options.quiet, options.log_json)
    with SignalGuard(), _lifecycle(Path(spec_path), list(sets), options, progress) as life:
        return life.run()
    raise AssertionError("unreachable")  # pragma: no cover - the with block returns or raises


def options_from_args(args: Any, **overrides: Any) -> RunOptions:
    """RunOptions from `scotbed run`/`campaign` arguments (see commands.run.add_run_options)."""
    fields_ = {
        "backend": args.backend,
        "out": Path(args.out),
        "keep": getattr(args, "keep", False),
        "quiet": getattr(args, "quiet", False),
        "verbose": getattr(args, "verbose", False),
        "log_json": getattr(args, "log_json", False),
        "require_valid": getattr(args, "require_valid", False),
        "image": getattr(args, "image", None),
        "workload_image": getattr(args, "workload_image", None) or WORKLOAD_IMAGE,
        "kube_context": getattr(args, "kube_context", None),
        "namespace_prefix": getattr(args, "namespace_prefix", None),
        "preferred_anti_affinity": getattr(args, "preferred_anti_affinity", False),
        "pod_cpu": getattr(args, "pod_cpu", None),
        "spark_master": getattr(args, "spark_master", None),
        "workers": getattr(args, "workers", 2),
        "calibration": getattr(args, "calibration", None),
    }
    fields_.update(overrides)
    return RunOptions(**fields_)


def main(args: Any) -> int:
    options = options_from_args(args)
    writable_dir(options.out)
    progress = make_progress(options.quiet, options.log_json)
    try:
        result = run_spec(args.spec, args.sets, options, progress)
    except RunFailed as e:
        if interrupts.exit_code() is not None:
            raise
        progress.error(f"scotbed run: failed: {e}")
        if e.run_dir is not None:
            progress.error(f"scotbed run: the partial run directory is kept: {e.run_dir}")
        return 3
    except Terminated:
        progress.error("scotbed run: terminated; resources removed, collected logs kept")
        return 143
    from scotbed.orchestrator.outcome import finish

    status = 0 if result.ok else undrained_or_incorrect(result.verdict)
    return finish(progress, result.verdict, result.summary, result.run_dir / contract.REPORT, status, options)


def undrained_or_incorrect(verdict: str) -> int:
    """Exit 4 when only the drain deadline kept deliveries back (a congested run, not a wrong one), else 1."""
    from scotbed.analysis.summary import UNDRAINED

    return 4 if verdict.startswith(UNDRAINED) else 1
