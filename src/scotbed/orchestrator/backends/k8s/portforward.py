"""Local TCP ports that reach broker pods from outside the cluster, for health checks and Admin calls.

Why in-process forwarding (``kubernetes.stream.portforward``) and not spawned
``kubectl port-forward`` processes: it needs no kubectl binary and no second
copy of the kubeconfig handling, it cannot outlive the orchestrator (threads
die with it, so nothing is left for ``scotbed down`` to hunt), and every
accepted TCP connection gets its own port-forward websocket, so a connection
the API server drops only breaks that one gRPC channel, which redials and
gets a fresh one; a kubectl process instead carries every connection over
one SPDY session and is known to stop accepting after one broken stream.
The orchestrator's traffic here is low-volume control traffic; the workload
never goes through a forward (the Locust Jobs dial in-cluster DNS names).
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

#: opens a byte stream to the pod's port; returns a connected socket-like object
Connect = Callable[[], Any]
#: the name the kubernetes client gives each port-forward's proxy thread
PROXY_THREAD = "Kubernetes port forward proxy"


def quiet_proxy_resets() -> None:
    """A kubernetes client's port-forward proxy thread ends with ``ConnectionResetError`` or
    ``BrokenPipeError`` when its connection closes from either side (a channel closed, a pod stopped):
    the expected end of one forwarded connection, logged, not printed to the terminal as a traceback.
    Any other thread's exception, and any other exception, still reaches the previous hook."""
    previous = threading.excepthook
    if getattr(previous, "quiets_proxy_resets", False):
        return

    def hook(args: threading.ExceptHookArgs) -> None:
        name = args.thread.name if args.thread is not None else ""
        if name.startswith(PROXY_THREAD) and isinstance(args.exc_value, ConnectionError):
            log.debug("%s ended: %s", name, args.exc_value)
            return
        previous(args)

    hook.quiets_proxy_resets = True  # type: ignore[attr-defined]
    threading.excepthook = hook


class Forwarder:
    """Listens on 127.0.0.1:<free port> and pipes every accepted connection to ``connect()``."""

    def __init__(self, name: str, connect: Connect, host: str = "127.0.0.1") -> None:
        self.name = name
        self._connect = connect
        self._server = socket.create_server((host, 0))
        self._server.settimeout(0.5)
        self._stop = threading.Event()
        self._conns: set[Any] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept_loop, name=f"port-forward {name}", daemon=True)
        self.errors = 0

    @property
    def address(self) -> str:
        host, port = self._server.getsockname()[:2]
        return f"{host}:{port}"

    def start(self) -> Forwarder:
        quiet_proxy_resets()
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)  # wakes a blocked accept() at once on Linux
        with contextlib.suppress(OSError):
            self._server.close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            with contextlib.suppress(OSError):
                c.close()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2)

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                local, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(
                target=self._pipe, args=(local,), name=f"port-forward {self.name}", daemon=True
            ).start()

    def _pipe(self, local: socket.socket) -> None:
        try:
            remote = self._connect()
        except Exception as e:  # the API server refused: drop this connection, the client redials
            self.errors += 1
            log.warning("port-forward to %s failed: %s", self.name, e)
            local.close()
            return
        with self._lock:
            self._conns.update((local, remote))
        try:
            _splice(local, remote, self._stop)
        finally:
            with self._lock:
                self._conns.difference_update((local, remote))
            for s in (local, remote):
                with contextlib.suppress(OSError):
                    s.close()


def _splice(a: Any, b: Any, stop: threading.Event) -> None:
    """Copy bytes both ways until either side closes."""
    peer = {a: b, b: a}
    while not stop.is_set():
        readable, _, _ = select.select([a, b], [], [], 0.5)
        for s in readable:
            try:
                data = s.recv(65536)
            except OSError:
                return
            if not data:
                return
            try:
                peer[s].sendall(data)
            except OSError:
                return
