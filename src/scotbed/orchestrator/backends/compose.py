"""The compose backend: every broker in its own container of one compose project per run.

The project is rendered into ``run_dir/manifests/`` (``docker-compose.yml`` and
``brokers.json``) so it can be inspected or re-run by hand. Inside the
project's network the brokers dial each other by service name; each broker's
gRPC port is also published on 127.0.0.1 at an ephemeral host port, which is
what the orchestrator (health, Admin) and the host-side Locust workload dial.
Event logs land on a bind mount at ``run_dir/events/``, so collecting them is
only a check that every broker wrote one.

The project name is recorded in the run state before ``up``, so ``scotbed
down`` can remove a project whose orchestrator died; :func:`sweep` removes
projects labelled ``scotbed.io/run-id`` that no state file knows about.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.broker import tls
from scotbed.config import BrokerConfig
from scotbed.orchestrator.backends.base import BackendDefaults, BackendError, DeployRequest
from scotbed.orchestrator.backends.compose_faults import ComposeFaults
from scotbed.orchestrator.backends.docker_engine import (
    IMAGE_UID,
    SERVICE_LABEL,
    ComposeCLI,
    ComposeProject,
    ContainerState,
    DockerEngine,
    DockerError,
    EngineUnavailable,
    Leftovers,
    container_user,
    project_name,
)
from scotbed.orchestrator.backends.host_workload import HostWorkload
from scotbed.orchestrator.plan import Addressing
from scotbed.orchestrator.render import compose as render
from scotbed.orchestrator.render import to_yaml, write_brokers_json
from scotbed.orchestrator.state import RunState, load_all

RUN_LABEL = "scotbed.io/run-id"
BASE_IMAGE_OFFLINE = "scotbed-base:bookworm"
REPO_ROOT = Path(__file__).resolve().parents[4]  # a source checkout: broker-image/, Makefile
DEAD_POLL_S = 1.0  # dead() is called in tight loops; docker inspect is not free on a shared host

Notify = Callable[[str], None]


def _quiet(message: str) -> None:
    """The default notifier: a backend used outside `scotbed run` stays silent."""


def render_run(request: DeployRequest, user: str | None, port: int = render.DEFAULT_PORT) -> dict[str, Any]:
    """The compose document of one run's configs (rendered with :func:`render.addressing`). Paths are
    relative to ``run_dir/manifests``; every broker publishes its gRPC port on 127.0.0.1 only."""
    doc = render.render_compose(
        request.configs,
        request.run_id,
        image=request.image,
        port=port,
        config_file=f"./{contract.BROKERS}",
        events_dir=f"../{contract.EVENTS_DIR}",
        user=user,
    )
    for svc in doc["services"].values():
        svc["ports"] = [f"127.0.0.1::{port}"]
    certs = tls.directory()  # the run's certificates (security.tls): mounted, and named in the containers
    if certs is not None:
        for svc in doc["services"].values():
            svc["volumes"].append(f"{certs.resolve()}:{tls.CONTAINER_DIR}:ro")
            svc["environment"][tls.ENV_DIR] = tls.CONTAINER_DIR
    return doc


def hand_to_image_user(certs: Path) -> None:
    """A root caller's certificate files go to the image's user, as the event-log folder does
    (:func:`container_user`): the keys are 0600 and the brokers run as that user."""
    if os.getuid() != 0:
        return
    for p in (certs, *certs.iterdir()):
        os.chown(p, IMAGE_UID, IMAGE_UID)


def published_ports(docs: list[dict[str, Any]], port: int = render.DEFAULT_PORT) -> dict[str, int]:
    """service -> host port that ``docker inspect`` reports for the container's ``port``/tcp."""
    out: dict[str, int] = {}
    for doc in docs:
        service = ((doc.get("Config") or {}).get("Labels") or {}).get(SERVICE_LABEL, "")
        bindings = ((doc.get("NetworkSettings") or {}).get("Ports") or {}).get(f"{port}/tcp") or []
        for b in bindings:
            if b.get("HostPort") and b.get("HostIp") in ("127.0.0.1", "0.0.0.0", ""):
                out[service] = int(b["HostPort"])
                break
    return out


def ensure_image(engine: DockerEngine, tag: str, notify: Notify = _quiet, root: Path = REPO_ROOT) -> None:
    """Build the broker image when it is absent: offline from the debootstrap base image and the host's
    wheelhouse when that base exists, else from the Dockerfile's official base image."""
    if engine.image_exists(tag):
        return
    dockerfile = root / "broker-image" / "Dockerfile"
    offline = engine.image_exists(BASE_IMAGE_OFFLINE)
    by_hand = f"`make image IMAGE={tag}{' OFFLINE=1' if offline else ''}` in a scotbed checkout"
    if not dockerfile.exists():
        raise BackendError(f"image {tag} is not present and {dockerfile} is missing: build it with {by_hand}")
    notify(f"building image {tag} ({'offline, ' + BASE_IMAGE_OFFLINE if offline else 'official base'})")
    try:
        engine.build_image(
            tag,
            context=root,
            dockerfile=dockerfile,
            base_image=BASE_IMAGE_OFFLINE if offline else None,
            wheelhouse=offline,
        )
    except DockerError as e:
        raise BackendError(f"image {tag} is not present and building it failed; run {by_hand}\n{e}") from None


class ComposeDeployment(HostWorkload):
    """One run's compose project, up and healthy."""

    def __init__(
        self, project: ComposeProject, run_id: str, configs: list[BrokerConfig], ready_timeout_s: float
    ) -> None:
        self.project = project
        self.run_id = run_id
        self.brokers = [c.id for c in configs]
        self.ports: dict[str, int] = {}
        self.metrics_addresses: dict[str, str] = {}  # on the run's network (render.addressing)
        self._dead: dict[str, str] = {}
        self._dead_at = 0.0
        self._down = False
        #: what the fault timeline kills, stops and starts again: the brokers' containers
        self.fault_target = ComposeFaults(self, configs, ready_timeout_s)

    def discover_ports(self) -> None:
        engine = self.project.engine
        found = published_ports(engine.inspect(engine.containers(self.project.project)))
        missing = [b for b in self.brokers if b not in found]
        if missing:
            raise BackendError(f"no published gRPC port for {', '.join(missing)}")
        self.ports = {b: found[b] for b in self.brokers}

    @property
    def admin_addresses(self) -> dict[str, str]:
        return {b: f"127.0.0.1:{p}" for b, p in self.ports.items()}

    @property
    def client_addresses(self) -> dict[str, str]:
        return self.admin_addresses

    def dead(self) -> dict[str, str]:
        """Brokers whose container stopped or was restarted, with exit code and last log lines; polled
        at most every DEAD_POLL_S, and a broker once dead stays dead."""
        if self._down or time.monotonic() - self._dead_at < DEAD_POLL_S:
            return dict(self._dead)
        self._dead_at = time.monotonic()
        engine = self.project.engine
        for doc in engine.inspect(engine.containers(self.project.project)):
            s = ContainerState.from_inspect(doc)
            restarts = int(doc.get("RestartCount") or 0)
            if s.service in self._dead or not (s.stopped or restarts):
                continue
            why = f"exited with code {s.exit_code}" if s.stopped else f"restarted {restarts} time(s)"
            tail = engine.logs_tail(s.id, 5).replace("\n", " | ")
            self._dead[s.service] = why + (f": {tail}" if tail else "")
        return dict(self._dead)

    def revive(self, broker_id: str) -> None:
        """The fault timeline started ``broker_id`` again: it is no longer dead."""
        self._dead.pop(broker_id, None)
        self._dead_at = 0.0

    def collect(self, events_dir: Path) -> list[Path]:
        """The logs are already in ``events_dir`` (bind mount); fail naming any broker without one."""
        missing = [b for b in self.brokers if not (events_dir / f"{b}.jsonl").is_file()]
        if missing:
            raise BackendError(f"no event log in {events_dir} for {', '.join(missing)}")
        return [events_dir / f"{b}.jsonl" for b in self.brokers]

    def teardown(self) -> None:
        """``down -v --remove-orphans``, then check that nothing labelled with the run id is left."""
        if self._down:
            return
        try:
            self.project.down()
            left = run_leftovers(self.project.engine, self.run_id)
        except DockerError as e:
            raise BackendError(str(e)) from None
        if left:
            raise BackendError(f"run {self.run_id}: left behind after down: {left}")
        self._down = True


def run_leftovers(engine: DockerEngine, run_id: str) -> Leftovers:
    """Containers, networks and volumes labelled with ``run_id``."""
    found = Leftovers()
    kinds = (("container", found.containers), ("network", found.networks), ("volume", found.volumes))
    for kind, into in kinds:
        argv = [engine.docker, kind, "ls", "-q", "--filter", f"label={RUN_LABEL}={run_id}"]
        if kind == "container":
            argv.insert(3, "-a")
        r = engine.run(argv, timeout=60)
        if r.returncode != 0:
            raise DockerError(f"listing {kind}s of run {run_id} failed: {r.tail(3)}")
        into += sorted(set(r.stdout.split()))
    return found


class ComposeBackend(BackendDefaults):
    """Brokers in containers of one compose project per run; ``scotbed down`` sweeps the projects no
    state file records even unasked (a Docker engine is local and cheap to ask)."""

    renders = True
    sweeps_unasked = True
    peers = "scotbed.orchestrator.backends.compose_peers:launcher"

    @classmethod
    def render(cls, args: Any, spec: Any, scot: Any, run_id: str, out: Path) -> int:
        from scotbed.orchestrator.render.compose_files import write_files

        return write_files(args, spec, scot, run_id, out)

    @classmethod
    def down_run(cls, state: RunState) -> list[str]:
        if not state.compose_project:
            return []
        down_project(state)
        return [f"compose project {state.compose_project}: down -v"]

    @classmethod
    def sweep(cls, run_id: str | None) -> list[str]:
        return [f"compose project {p}: down -v" for p in sweep(run_id)]

    @classmethod
    def from_options(cls, options: Any, progress: Any) -> ComposeBackend:
        return cls(keep_on_failure=options.keep, notify=progress.info)

    def __init__(
        self,
        *,
        engine: DockerEngine | None = None,
        keep_on_failure: bool = False,
        notify: Notify = _quiet,
    ) -> None:
        self.engine = engine or DockerEngine()
        self.keep_on_failure = keep_on_failure
        self.notify = notify

    def _tools(self, image: str) -> ComposeCLI:
        try:
            self.engine.check()
            cli = self.engine.compose_cli()
        except DockerError as e:
            raise BackendError(str(e)) from None
        ensure_image(self.engine, image, self.notify)
        return cli

    def addressing(self, run_id: str) -> Addressing:
        return render.addressing()

    def deploy(self, request: DeployRequest) -> ComposeDeployment:
        cli = self._tools(request.image)
        manifests = request.run_dir / contract.MANIFESTS_DIR
        manifests.mkdir(parents=True, exist_ok=True)
        doc = render_run(request, container_user(request.run_dir / contract.EVENTS_DIR))
        certs = tls.directory()
        if certs is not None:
            hand_to_image_user(certs)
        write_brokers_json(manifests / contract.BROKERS, request.configs)
        file = manifests / "docker-compose.yml"
        file.write_text(to_yaml(doc))
        project = ComposeProject(self.engine, cli, file, project_name(request.run_id))
        request.state.compose_project = project.project
        request.state.compose_file = str(file)
        request.state.save()
        deployment = ComposeDeployment(project, request.run_id, request.configs, request.ready_timeout_s)
        deployment.metrics_addresses = render.addressing().metrics(request.configs)
        try:
            project.up()
            try:
                project.wait_healthy(request.ready_timeout_s)
            except DockerError as e:
                raise BackendError(self._not_healthy(project, e)) from None
            deployment.discover_ports()
        except (DockerError, BackendError) as e:
            if not self.keep_on_failure:
                try:
                    deployment.teardown()
                except BackendError as down_error:
                    raise BackendError(f"{e}\nand tearing down failed: {down_error}") from None
            raise BackendError(str(e)) from None
        except BaseException:
            # Ctrl-C or SIGTERM while starting: the lifecycle has no deployment to tear down yet.
            if not self.keep_on_failure:
                with contextlib.suppress(BackendError):
                    deployment.teardown()
            raise
        self.notify(f"compose project {project.project} ({cli.argv[0]} {cli.version}) healthy")
        return deployment

    def _not_healthy(self, project: ComposeProject, error: DockerError) -> str:
        """The wait's message plus the last log lines of every broker still running but not healthy
        (stopped ones already carry theirs)."""
        parts = [str(error)]
        try:
            for s in project.states():
                if not s.ready and not s.stopped:
                    parts.append(f"{s.service} last log lines:\n{project.engine.logs_tail(s.id, 5)}")
        except DockerError as e:
            parts.append(f"(could not read the containers' logs: {e})")
        return "\n".join(parts)


def down_project(state: RunState, engine: DockerEngine | None = None) -> None:
    """`scotbed down` of one recorded run: ``down -v`` with its compose file when it still exists,
    else removal of the project's resources by label."""
    if not state.compose_project:
        return
    engine = engine or DockerEngine()
    engine.check()
    file = Path(state.compose_file) if state.compose_file else None
    if file is not None and file.is_file():
        ComposeProject(engine, engine.compose_cli(), file, state.compose_project).down()
        return
    left = engine.remove_resources(state.compose_project)
    if left:
        raise DockerError(f"compose project {state.compose_project}: left behind: {left}")


def sweep(run_id: str | None = None, engine: DockerEngine | None = None) -> list[str]:
    """Remove compose projects labelled ``scotbed.io/run-id`` (of ``run_id`` when given) that no run
    state file records; returns their names. Without an engine there is nothing to sweep."""
    engine = engine or DockerEngine()
    try:
        engine.check()
    except EngineUnavailable:
        return []
    label = f"{RUN_LABEL}={run_id}" if run_id else RUN_LABEL
    recorded = {st.compose_project for st in load_all() if st.compose_project}
    removed = []
    for project in engine.projects(label):
        if project in recorded:
            continue
        left = engine.remove_resources(project)
        if left:
            raise DockerError(f"compose project {project}: left behind: {left}")
        removed.append(project)
    return removed
