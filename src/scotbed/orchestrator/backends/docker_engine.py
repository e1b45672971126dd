"""The Docker engine as the compose backend sees it: the docker and compose CLIs behind one small seam.

Everything goes through the command line (``docker``, ``docker compose`` or
``docker-compose``) rather than the Docker SDK, because that is what a user
can re-run by hand from the error message, and because compose v1 (Debian's
``docker-compose`` 1.29) and v2 (the ``docker compose`` plugin) differ only
in their argv prefix for the verbs used here. v1 has no ``up --wait``, so
readiness is always polled from ``docker inspect`` (health status and exit
codes), which also lets a timeout name each broker that is not ready and why.

Every call has a timeout; every failure raises :class:`DockerError` with the
command and the tail of its output. Processes run through a :class:`Runner`,
so the parsing and waiting logic is tested without an engine.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from scotbed.errors import ScotbedError

# The uid:gid the broker image runs as (broker-image/Dockerfile, ARG UID).
IMAGE_UID = 10001
IMAGE_TITLE_LABEL = "org.opencontainers.image.title=scotbed-broker"
PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"
START_DOCKERD_HINT = "start one with scripts/start-dockerd.sh (or your system's docker service)"


class DockerError(ScotbedError, RuntimeError):
    """A docker or compose command failed; the message has the command and its output's tail."""


class EngineUnavailable(DockerError):
    """No Docker engine answers (CLI missing, daemon down, or no permission on its socket)."""


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def tail(self, lines: int = 15) -> str:
        text = (self.stderr.strip() + "\n" + self.stdout.strip()).strip()
        return "\n".join(text.splitlines()[-lines:])


class Runner(Protocol):
    def __call__(self, argv: Sequence[str], *, timeout: float) -> Result: ...


def subprocess_runner(argv: Sequence[str], *, timeout: float) -> Result:
    """Run a command to completion; a missing program is returncode 127, like a shell."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError as e:
        return Result(tuple(argv), 127, "", str(e))
    except subprocess.TimeoutExpired as e:
        raise DockerError(f"`{shlex.join(argv)}` did not finish within {timeout:g} s") from e
    return Result(tuple(argv), done.returncode, done.stdout, done.stderr)


def _checked(result: Result, what: str) -> Result:
    if result.returncode != 0:
        raise DockerError(
            f"{what} failed (exit {result.returncode}): `{shlex.join(result.argv)}`\n{result.tail()}"
        )
    return result


def project_name(run_id: str) -> str:
    """A compose project name both v1 and v2 accept unchanged (lowercase, [a-z0-9_-], leading alnum)."""
    name = re.sub(r"[^a-z0-9_-]+", "-", run_id.lower()).strip("-_")
    return f"scotbed-{name}" if name else "scotbed"


def build_argv(
    tag: str,
    *,
    context: str | Path,
    dockerfile: str | Path,
    base_image: str | None = None,
    wheelhouse: bool = False,
    docker: str = "docker",
) -> list[str]:
    """``docker build`` for broker-image/Dockerfile. With ``wheelhouse`` the build has no network at
    all, which proves it needs no registry (the base image must already be local)."""
    # --force-rm: a failed step must not leave its container behind.
    argv = [docker, "build", "--force-rm", "-f", str(dockerfile), "-t", tag]
    if base_image:
        argv += ["--build-arg", f"BASE_IMAGE={base_image}"]
    if wheelhouse:
        argv += ["--build-arg", "WHEELHOUSE=1", "--network", "none"]
    return [*argv, str(context)]


@dataclass(frozen=True)
class ComposeCLI:
    argv: tuple[str, ...]  # ("docker", "compose") or ("docker-compose",)
    version: str
    v2: bool


@dataclass
class ContainerState:
    """One container of a compose project, as ``docker inspect`` reports it."""

    id: str
    service: str
    status: str  # created, running, exited, dead, ...
    health: str | None  # starting, healthy, unhealthy; None = the container has no health check
    exit_code: int
    health_log: str = ""  # output of the last health probe

    @classmethod
    def from_inspect(cls, doc: dict[str, Any]) -> ContainerState:
        state = doc.get("State") or {}
        labels = (doc.get("Config") or {}).get("Labels") or {}
        health = state.get("Health")
        log = (health or {}).get("Log") or []
        return cls(
            id=doc.get("Id", "")[:12],
            service=labels.get(SERVICE_LABEL) or doc.get("Name", "").lstrip("/"),
            status=state.get("Status", "unknown"),
            health=health.get("Status") if health else None,
            exit_code=int(state.get("ExitCode", 0)),
            health_log=(log[-1].get("Output") or "").strip() if log else "",
        )

    @property
    def ready(self) -> bool:
        return self.status == "running" and self.health in (None, "healthy")

    @property
    def stopped(self) -> bool:
        return self.status in ("exited", "dead")


@dataclass
class Leftovers:
    containers: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.containers or self.networks or self.volumes)

    def __str__(self) -> str:
        parts = [f"{k}: {', '.join(v)}" for k, v in vars(self).items() if v]
        return "; ".join(parts) or "nothing"


class DockerEngine:
    """The local Docker engine, through its CLI."""

    def __init__(self, runner: Runner = subprocess_runner, docker: str = "docker") -> None:
        self.run = runner
        self.docker = docker

    def check(self, timeout_s: float = 20.0) -> str:
        """The server version, or :class:`EngineUnavailable` saying what is missing and what to do."""
        r = self.run([self.docker, "version", "--format", "{{.Server.Version}}"], timeout=timeout_s)
        if r.returncode == 127:
            raise EngineUnavailable(
                f"no `{self.docker}` CLI on PATH: install docker.io (Debian) or Docker Engine"
            )
        if r.returncode != 0 or not r.stdout.strip():
            raise EngineUnavailable(
                f"the Docker engine does not answer ({r.tail(3) or 'no output'}); {START_DOCKERD_HINT}"
            )
        return r.stdout.strip()

    def compose_cli(self, timeout_s: float = 20.0) -> ComposeCLI:
        """Compose v2 (``docker compose``) when the plugin exists, else v1 (``docker-compose``).
        ``SCOTBED_COMPOSE`` (e.g. ``docker-compose``) picks one explicitly."""
        override = os.environ.get("SCOTBED_COMPOSE")
        candidates = (
            [tuple(shlex.split(override))] if override else [(self.docker, "compose"), ("docker-compose",)]
        )
        for argv in candidates:
            r = self.run([*argv, "version", "--short"], timeout=timeout_s)
            version = r.stdout.strip().lstrip("v")
            if r.returncode == 0 and version:
                return ComposeCLI(argv, version, v2=not version.startswith("1."))
        tried = " and ".join(f"`{shlex.join(c)}`" for c in candidates)
        raise DockerError(
            f"no compose CLI found (tried {tried}): install docker-compose or the compose plugin"
        )

    def image_exists(self, tag: str) -> bool:
        return self.run([self.docker, "image", "inspect", tag], timeout=30).returncode == 0

    def build_image(
        self,
        tag: str,
        *,
        context: str | Path,
        dockerfile: str | Path,
        base_image: str | None = None,
        wheelhouse: bool = False,
        timeout_s: float = 1800.0,
    ) -> None:
        """Build the broker image; offline (``wheelhouse``) needs ``base_image`` present locally and a
        wheelhouse in ``context``/.wheelhouse (scripts/build-wheelhouse.sh)."""
        if wheelhouse:
            if not any(Path(context, ".wheelhouse").glob("*.whl")):
                raise DockerError(
                    f"no wheels in {Path(context, '.wheelhouse')}: run scripts/build-wheelhouse.sh"
                )
            if base_image and not self.image_exists(base_image):
                raise DockerError(
                    f"base image {base_image} is not present and cannot be pulled offline: "
                    "run scripts/build-base-image.sh"
                )
        argv = build_argv(
            tag,
            context=context,
            dockerfile=dockerfile,
            base_image=base_image,
            wheelhouse=wheelhouse,
            docker=self.docker,
        )
        _checked(self.run(argv, timeout=timeout_s), f"building image {tag}")
        # Every rebuild leaves the replaced image (its own ~100 MB venv layer) dangling; prune takes
        # only dangling images, and only ours. The dangling build stage stays: it is the layer cache
        # that makes a rebuild after a source edit reinstall only scotbed itself.
        self.run([self.docker, "image", "prune", "-f", "--filter", f"label={IMAGE_TITLE_LABEL}"], timeout=120)

    def inspect(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        if not ids:
            return []
        r = self.run([self.docker, "inspect", *ids], timeout=60)
        # A container removed between listing and inspecting is reported on stderr; the rest still parse.
        docs: list[dict[str, Any]] = json.loads(r.stdout or "[]")
        return docs

    def _ls(self, kind: str, project: str) -> list[str]:
        argv = [self.docker, kind, "ls", "-q", "--filter", f"label={PROJECT_LABEL}={project}"]
        if kind == "container":
            argv.insert(3, "-a")
        out = _checked(self.run(argv, timeout=60), f"listing {kind}s of {project}").stdout
        return sorted(set(out.split()))

    def containers(self, project: str) -> list[str]:
        """Ids of the project's containers, running or not."""
        return self._ls("container", project)

    def resources(self, project: str) -> Leftovers:
        """Containers (running or not), networks and volumes labelled with the compose project."""
        return Leftovers(
            self._ls("container", project), self._ls("network", project), self._ls("volume", project)
        )

    def remove_resources(self, project: str) -> Leftovers:
        """Remove a project's resources by label, without its compose file (``scotbed down`` of an
        old run); returns what could not be removed."""
        found = self.resources(project)
        if found.containers:
            self.run([self.docker, "rm", "-f", "-v", *found.containers], timeout=120)
        if found.networks:
            self.run([self.docker, "network", "rm", *found.networks], timeout=60)
        if found.volumes:
            self.run([self.docker, "volume", "rm", "-f", *found.volumes], timeout=60)
        return self.resources(project)

    def projects(self, label: str) -> list[str]:
        """Compose projects with a container or network carrying ``label`` (e.g. scotbed.io/run-id)."""
        names: set[str] = set()
        for kind in ("container", "network"):
            argv = [self.docker, kind, "ls", "--filter", f"label={label}", "--format", "{{.Labels}}"]
            if kind == "container":
                argv.insert(3, "-a")
            out = _checked(self.run(argv, timeout=60), f"listing {kind}s labelled {label}").stdout
            for line in out.splitlines():
                for item in line.split(","):
                    key, _, value = item.partition("=")
                    if key == PROJECT_LABEL and value:
                        names.add(value)
        return sorted(names)

    def logs_tail(self, container: str, lines: int = 20) -> str:
        r = self.run([self.docker, "logs", "--tail", str(lines), container], timeout=30)
        return (r.stdout + r.stderr).strip()


def container_user(bind_dir: Path) -> str | None:
    """Who the brokers should run as so they can write their event logs into ``bind_dir``.

    A non-root caller gets its own uid:gid (the logs then belong to the caller); for root the image's
    non-root user stays and the folder is handed to it, because running brokers as root to please a
    bind mount would undo the image's hardening. Returns the compose ``user:`` value or None.
    """
    bind_dir.mkdir(parents=True, exist_ok=True)
    if os.getuid() != 0:
        return f"{os.getuid()}:{os.getgid()}"
    os.chown(bind_dir, IMAGE_UID, IMAGE_UID)
    return None


Progress = Callable[[int, int], None]  # (ready, total)


class ComposeProject:
    """One compose file deployed as one project: up, wait until healthy, inspect, down."""

    def __init__(self, engine: DockerEngine, cli: ComposeCLI, file: Path, project: str) -> None:
        self.engine = engine
        self.cli = cli
        self.file = Path(file)
        self.project = project

    def argv(self, *args: str) -> list[str]:
        return [*self.cli.argv, "-f", str(self.file), "-p", self.project, *args]

    def _compose(self, what: str, *args: str, timeout_s: float) -> Result:
        return _checked(
            self.engine.run(self.argv(*args), timeout=timeout_s), f"compose {what} ({self.project})"
        )

    def services(self) -> list[str]:
        return self._compose("config", "config", "--services", timeout_s=60).stdout.split()

    def act(self, *args: str, timeout_s: float) -> None:
        """One compose command on some services (``kill -s SIGKILL b``, ``stop``, ``start``: faults)."""
        self._compose(args[0], *args, timeout_s=timeout_s)

    def up(self, timeout_s: float = 300.0) -> None:
        """Create and start every service detached; never builds or pulls (no registry here)."""
        self._compose("up", "up", "-d", "--no-build", "--remove-orphans", timeout_s=timeout_s)

    def states(self) -> list[ContainerState]:
        ids = self.engine.containers(self.project)
        return [ContainerState.from_inspect(d) for d in self.engine.inspect(ids)]

    def wait_healthy(
        self, timeout_s: float, *, poll_s: float = 1.0, progress: Progress | None = None
    ) -> list[ContainerState]:
        """Poll until every service's container runs and passes its health check.

        Fails at once when a container stops (naming it, with its exit code and last log lines), and
        at the timeout naming every service that is not ready with its health status and last probe
        output.
        """
        expected = self.services()
        deadline = time.monotonic() + timeout_s
        while True:
            states = {s.service: s for s in self.states()}
            stopped = [s for s in states.values() if s.stopped]
            if stopped:
                raise DockerError("; ".join(self._stopped_reason(s) for s in stopped))
            ready = [name for name in expected if name in states and states[name].ready]
            if progress is not None:
                progress(len(ready), len(expected))
            if len(ready) == len(expected):
                return [states[name] for name in expected]
            if time.monotonic() >= deadline:
                raise DockerError(
                    f"compose project {self.project}: not healthy after {timeout_s:g} s: "
                    + "; ".join(
                        self._not_ready_reason(name, states.get(name))
                        for name in expected
                        if name not in ready
                    )
                )
            time.sleep(poll_s)

    def _stopped_reason(self, s: ContainerState) -> str:
        logs = self.engine.logs_tail(s.id, 10)
        return f"{s.service} stopped (exit {s.exit_code}); last log lines:\n{logs}"

    @staticmethod
    def _not_ready_reason(name: str, s: ContainerState | None) -> str:
        if s is None:
            return f"{name}: no container"
        detail = f" ({s.health_log.splitlines()[-1]})" if s.health_log else ""
        return f"{name}: {s.status}/{s.health or 'no health check'}{detail}"

    def service_ips(self) -> dict[str, str]:
        """service -> container IP on its first network. The host reaches these directly on Linux
        (bridge networks are routed locally); Docker Desktop needs published ports instead."""
        out: dict[str, str] = {}
        for doc in self.engine.inspect(self.engine.containers(self.project)):
            service = ((doc.get("Config") or {}).get("Labels") or {}).get(SERVICE_LABEL, "")
            networks = (doc.get("NetworkSettings") or {}).get("Networks") or {}
            for net in networks.values():
                if net.get("IPAddress"):
                    out[service] = net["IPAddress"]
                    break
        return out

    def down(self, timeout_s: float = 120.0, stop_grace_s: int = 10) -> None:
        """``down -v --remove-orphans``, then make sure nothing labelled with the project is left
        (removing stragglers by label); raises naming whatever survives. Safe to call twice."""
        self._compose(
            "down", "down", "-v", "--remove-orphans", "--timeout", str(stop_grace_s), timeout_s=timeout_s
        )
        left = self.engine.resources(self.project)
        if left:
            left = self.engine.remove_resources(self.project)
        if left:
            raise DockerError(f"compose project {self.project}: left behind after down: {left}")
