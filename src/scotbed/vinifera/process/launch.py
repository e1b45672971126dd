"""Where peer processes run: a :class:`Launcher` places every peer (the address the other peers
dial, the address it binds, its event log as the process sees them), starts them from one run file
and tells the driver where to reach each one. :class:`LocalLauncher` runs them on this host; the
compose launcher (``orchestrator/backends/compose_peers.py``) runs each in a container, the k8s
launcher (``orchestrator/backends/k8s/peers.py``) each in a pod.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from scotbed import contract
from scotbed.broker.launcher import HOST, reserve_ports


@dataclass(frozen=True)
class PeerPlace:
    """One peer as its process sees it: ``address`` (what the other peers dial), ``bind``, ``log``."""

    address: str
    bind: str
    log: str


class Launcher(Protocol):
    def places(self, workdir: Path, names: Sequence[int]) -> dict[int, PeerPlace]:
        """Where every peer will run; called once, before :meth:`start`."""
        ...

    def start(self, workdir: Path, run_file: Path) -> dict[int, str]:
        """Start every placed peer from ``run_file``; returns name -> host:port the driver dials."""
        ...

    def release(self) -> None:
        """Every peer answers: free what held their places until they bound (local: the ports)."""
        ...

    def exited(self) -> dict[int, str]:
        """Peers no longer running, with the reason (exit code, last log lines)."""
        ...

    def kill(self, name: int) -> None:
        """A peer failure (SIGKILL)."""
        ...

    def stop(self) -> None:
        """Stop every peer and remove what the launcher started; safe to call twice."""
        ...


def command(run_file: str, name: int) -> list[str]:
    """The arguments of one peer process after ``python`` (the module is the image's contract too)."""
    return ["-m", "scotbed.vinifera.process", "--run-file", run_file, "--name", str(name)]


class LocalLauncher:
    """Peer processes on this host: loopback ports reserved until they bind, logs in the run directory."""

    def __init__(self) -> None:
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self._socks: list[socket.socket] = []
        self._places: dict[int, PeerPlace] = {}
        self._workdir = Path()

    def places(self, workdir: Path, names: Sequence[int]) -> dict[int, PeerPlace]:
        self._workdir = workdir
        self._socks = reserve_ports(len(names))
        out = {}
        for n, s in zip(names, self._socks, strict=True):
            addr = f"{HOST}:{s.getsockname()[1]}"
            out[n] = PeerPlace(addr, addr, str(workdir / contract.events_file(contract.peer_node(n))))
        self._places = out
        return out

    def start(self, workdir: Path, run_file: Path) -> dict[int, str]:
        logs = workdir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        for n in self._places:
            with (
                (logs / f"{contract.peer_node(n)}.out").open("ab") as out,
                (logs / f"{contract.peer_node(n)}.err").open("ab") as err,
            ):
                argv = [sys.executable, *command(str(run_file), n)]
                self.procs[n] = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        return {n: p.address for n, p in self._places.items()}

    def release(self) -> None:
        """The reserved ports are held until every peer bound its own (SO_REUSEPORT): closed earlier,
        another run's process can take one and answer our Control calls (UNIMPLEMENTED)."""
        for s in self._socks:
            s.close()
        self._socks = []

    def exited(self) -> dict[int, str]:
        logs = self._workdir / "logs"
        return {
            n: f"exit {p.returncode}: {(logs / f'{contract.peer_node(n)}.err').read_text()[-300:]}"
            for n, p in self.procs.items()
            if p.poll() is not None
        }

    def kill(self, name: int) -> None:
        self.procs[name].kill()
        self.procs[name].wait()

    def stop(self) -> None:
        """SIGTERM every peer, SIGKILL after 5 s."""
        self.release()
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 5.0
        for p in self.procs.values():
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
