"""Peers on compose: every peer process in its own container of the broker image (one compose project
per run), driven from the host exactly as on the local backend.

The peers dial each other by service name on the run's network and listen on 0.0.0.0; each
publishes its gRPC port on 127.0.0.1, which is what the driver (:class:`PeerCluster`) dials. The run
file is bind-mounted read-only and the event logs land on a bind mount at ``run_dir/events/``, so the
analysis reads them where the local backend leaves them. The project name goes into the run state
before ``up``, so ``scotbed down`` removes a project whose driver died.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.orchestrator.backends.base import BackendError
from scotbed.orchestrator.backends.compose import RUN_LABEL, ensure_image, published_ports, run_leftovers
from scotbed.orchestrator.backends.docker_engine import (
    ComposeProject,
    ContainerState,
    DockerEngine,
    DockerError,
    container_user,
    project_name,
)
from scotbed.orchestrator.render import compose as render
from scotbed.orchestrator.render import to_yaml
from scotbed.orchestrator.state import RunState
from scotbed.vinifera.process.launch import PeerPlace, command

RUN_FILE_PATH = "/etc/scotbed/peers.json"


def peer_service(
    name: int, run_id: str, image: str, run_file: str, events_dir: str, user: str | None
) -> dict[str, Any]:
    """One peer's service: the broker image with the peer module as its entrypoint (no health
    check: the driver's Control call with wait-for-ready is the readiness probe)."""
    port = render.DEFAULT_PORT
    svc: dict[str, Any] = {
        "image": image,
        "hostname": contract.peer_node(name),
        "entrypoint": ["python", *command(RUN_FILE_PATH, name)],
        "environment": {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"},
        "labels": {RUN_LABEL: run_id, "scotbed.io/peer": str(name)},
        "networks": [render.NETWORK],
        "volumes": [f"{run_file}:{RUN_FILE_PATH}:ro", f"{events_dir}:{render.EVENTS_DIR}"],
        "ports": [f"127.0.0.1::{port}"],
        "read_only": True,
        "tmpfs": ["/tmp"],
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "restart": "no",
    }
    if user is not None:
        svc["user"] = user
    return svc


def render_peers(
    names: Sequence[int], run_id: str, image: str, run_file: str, events_dir: str, user: str | None
) -> dict[str, Any]:
    """The compose document of one peers run; paths relative to ``run_dir/manifests``."""
    services = {
        contract.peer_node(n): peer_service(n, run_id, image, run_file, events_dir, user) for n in names
    }
    network = {"driver": "bridge", "labels": {RUN_LABEL: run_id}}
    return {"services": services, "networks": {render.NETWORK: network}}


class ComposePeerLauncher:
    """A :class:`~scotbed.vinifera.process.launch.Launcher` that runs each peer in a container."""

    def __init__(
        self, run_id: str, image: str, engine: DockerEngine | None = None, state: RunState | None = None
    ) -> None:
        self.run_id, self.image, self.state = run_id, image, state
        self.engine = engine or DockerEngine()
        self.project: ComposeProject | None = None
        self.names: list[int] = []
        self._down = False

    def places(self, workdir: Path, names: Sequence[int]) -> dict[int, PeerPlace]:
        self.names = list(names)
        port = render.DEFAULT_PORT
        return {
            n: PeerPlace(
                f"{contract.peer_node(n)}:{port}",
                f"0.0.0.0:{port}",
                f"{render.EVENTS_DIR}/{contract.peer_node(n)}.jsonl",
            )
            for n in names
        }

    def start(self, workdir: Path, run_file: Path) -> dict[int, str]:
        try:
            self.engine.check()
            cli = self.engine.compose_cli()
        except DockerError as e:
            raise BackendError(str(e)) from None
        ensure_image(self.engine, self.image)
        manifests = workdir / contract.MANIFESTS_DIR
        manifests.mkdir(parents=True, exist_ok=True)
        user = container_user(workdir / contract.EVENTS_DIR)
        run_rel, events_rel = f"../{run_file.relative_to(workdir)}", f"../{contract.EVENTS_DIR}"
        doc = render_peers(self.names, self.run_id, self.image, run_rel, events_rel, user)
        file = manifests / "docker-compose.yml"
        file.write_text(to_yaml(doc))
        self.project = ComposeProject(self.engine, cli, file, project_name(self.run_id))
        if self.state is not None:
            self.state.compose_project, self.state.compose_file = self.project.project, str(file)
            self.state.save()
        try:
            self.project.up()
            found = published_ports(self.engine.inspect(self.engine.containers(self.project.project)))
        except DockerError as e:
            raise BackendError(str(e)) from None
        missing = [n for n in self.names if contract.peer_node(n) not in found]
        if missing:
            raise BackendError(f"no published gRPC port for peers {missing}")
        return {n: f"127.0.0.1:{found[contract.peer_node(n)]}" for n in self.names}

    def release(self) -> None:
        """Nothing to free: every container owns its port."""

    def exited(self) -> dict[int, str]:
        if self.project is None:
            return {}
        out = {}
        for doc in self.engine.inspect(self.engine.containers(self.project.project)):
            s = ContainerState.from_inspect(doc)
            if s.stopped and s.service.startswith(contract.PEER_PREFIX):
                tail = self.engine.logs_tail(s.id, 5).replace("\n", " | ")
                out[contract.peer_name(s.service)] = f"exit {s.exit_code}: {tail}"
        return out

    def kill(self, name: int) -> None:
        assert self.project is not None
        try:
            self.project.act("kill", "-s", "SIGKILL", contract.peer_node(name), timeout_s=60)
        except DockerError as e:
            raise BackendError(str(e)) from None

    def stop(self) -> None:
        """``down -v``, then check nothing labelled with the run id is left."""
        if self.project is None or self._down:
            return
        try:
            self.project.down()
            left = run_leftovers(self.engine, self.run_id)
        except DockerError as e:
            raise BackendError(str(e)) from None
        if left:
            raise BackendError(f"run {self.run_id}: left behind after down: {left}")
        self._down = True


def launcher(
    backend: Any, run_id: str, image: str, state: RunState, ready_timeout_s: float
) -> ComposePeerLauncher:
    """The compose backend's peer launcher (its ``peers``): one container per peer."""
    return ComposePeerLauncher(run_id, image, state=state)
