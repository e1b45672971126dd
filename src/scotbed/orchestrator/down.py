"""`scotbed down`: remove whatever earlier runs left behind.

It reads the run state files (see :mod:`scotbed.orchestrator.state`) and,
for each matching run, stops its processes (only when the pid still belongs
to the process the run started), takes its compose project down with its
volumes, and deletes its Kubernetes namespace. It also sweeps what carries
scotbed's labels but lost its state file: compose containers labelled
``scotbed.io/run-id`` and namespaces labelled ``app.kubernetes.io/managed-by=scotbed``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scotbed.orchestrator.state import ProcessRecord, RunState, load_all, same_process

GRACE_S = 10.0


@dataclass
class DownReport:
    runs: list[str] = field(default_factory=list)
    processes: list[str] = field(default_factory=list)
    compose_projects: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"run {r}: removed" for r in self.runs]
        out += [f"stopped {p}" for p in self.processes]
        out += [f"compose project {p}: down -v" for p in self.compose_projects]
        out += [f"namespace {n}: deleted" for n in self.namespaces]
        out += [f"error: {e}" for e in self.errors]
        return out or ["nothing to remove"]


def stop_processes(records: list[ProcessRecord], grace_s: float = GRACE_S) -> list[str]:
    """SIGTERM every recorded process still alive, then SIGKILL what is left after ``grace_s``."""
    live = [r for r in records if same_process(r)]
    for r in live:
        with contextlib.suppress(ProcessLookupError):
            os.kill(r.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(same_process(r) for r in live):
        time.sleep(0.1)
    for r in live:
        if same_process(r):
            with contextlib.suppress(ProcessLookupError):
                os.kill(r.pid, signal.SIGKILL)
    for r in live:  # reap our own children (a run in this process); others are reaped by init
        with contextlib.suppress(ChildProcessError):
            os.waitpid(r.pid, os.WNOHANG)
    return [f"{r.role} (pid {r.pid})" for r in live]


def down(
    run_id: str | None = None,
    backend: str | None = None,
    compose_down: Callable[[RunState], None] | None = None,
    k8s_down: Callable[[str | None, str | None], list[str]] | None = None,
    compose_sweep: Callable[[str | None], list[str]] | None = None,
) -> DownReport:
    """Remove the resources of ``run_id`` (or of every recorded run), optionally of one backend.

    The compose and Kubernetes removers are passed in so this module stays free
    of Docker and Kubernetes imports; :func:`default_removers` supplies the real ones.
    """
    report = DownReport()
    for st in load_all():
        if run_id is not None and st.run_id != run_id:
            continue
        if backend is not None and st.backend != backend:
            continue
        try:
            report.processes += stop_processes(st.processes)
            if st.compose_project and compose_down is not None:
                compose_down(st)
                report.compose_projects.append(st.compose_project)
            if st.k8s_namespace and k8s_down is not None:
                report.namespaces += k8s_down(st.k8s_context, st.run_id)
            st.forget()
            report.runs.append(st.run_id)
        except Exception as e:  # one stuck run must not keep the others alive
            report.errors.append(f"{st.run_id}: {e}")
    if backend in (None, "compose") and compose_sweep is not None:
        try:
            report.compose_projects += [p for p in compose_sweep(run_id) if p not in report.compose_projects]
        except Exception as e:
            report.errors.append(f"compose sweep: {e}")
    if backend == "k8s" and k8s_down is not None:
        try:
            report.namespaces += [n for n in k8s_down(None, run_id) if n not in report.namespaces]
        except Exception as e:
            report.errors.append(f"kubernetes sweep: {e}")
    return report


def default_removers() -> dict[str, Any]:
    """The real compose and Kubernetes removers, imported only when needed."""

    def compose_down(st: RunState) -> None:
        from scotbed.orchestrator.backends import compose

        compose.down_project(st)

    def compose_sweep(run_id: str | None) -> list[str]:
        from scotbed.orchestrator.backends import compose

        return compose.sweep(run_id)

    def k8s_down(context: str | None, run_id: str | None) -> list[str]:
        from scotbed.orchestrator.backends.k8s import backend as k8s

        return k8s.down_all(context=context, run_id=run_id)

    return {"compose_down": compose_down, "compose_sweep": compose_sweep, "k8s_down": k8s_down}


def main(args: Any) -> int:
    """`scotbed down [--backend local|compose|k8s] [RUN_ID]`."""
    report = down(args.run_id, args.backend, **default_removers())
    for line in report.lines():
        print(line)
    return 1 if report.errors else 0
