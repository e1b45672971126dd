"""`scotbed down`: remove whatever earlier runs left behind.

It reads the run state files (see :mod:`scotbed.orchestrator.state`) and,
for each matching run, stops its processes (only when the pid still belongs
to the process the run started) and has its backend remove the rest (compose: the project with its
volumes; k8s: the namespace). It also has the backends sweep what carries
scotbed's labels but lost its state file: compose containers labelled
``scotbed.io/run-id`` and (``--backend k8s``) namespaces labelled ``app.kubernetes.io/managed-by=scotbed``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any

from scotbed.orchestrator.state import ProcessRecord, load_all, same_process

GRACE_S = 10.0


@dataclass
class DownReport:
    runs: list[str] = field(default_factory=list)
    processes: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # the backends' lines: what they removed
    errors: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"run {r}: removed" for r in self.runs]
        out += [f"stopped {p}" for p in self.processes]
        out += self.removed
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


def down(run_id: str | None = None, backend: str | None = None) -> DownReport:
    """Remove the resources of ``run_id`` (or of every recorded run), optionally of one backend.

    Beyond its processes, a run's resources are its backend's to remove (``down_run`` of the backend
    class); then every backend asked (``backend``, or, without one, those declaring
    ``sweeps_unasked``) sweeps what carries scotbed's labels but no state file records.
    """
    from scotbed.orchestrator.backends import REGISTRY, backend_class

    report = DownReport()
    for st in load_all():
        if run_id is not None and st.run_id != run_id:
            continue
        if backend is not None and st.backend != backend:
            continue
        try:
            report.processes += stop_processes(st.processes)
            report.removed += backend_class(st.backend).down_run(st)
            st.forget()
            report.runs.append(st.run_id)
        except Exception as e:  # one stuck run must not keep the others alive
            report.errors.append(f"{st.run_id}: {e}")
    for name in REGISTRY:
        cls = backend_class(name)
        if backend != name and not (backend is None and cls.sweeps_unasked):
            continue
        try:
            report.removed += [line for line in cls.sweep(run_id) if line not in report.removed]
        except Exception as e:
            report.errors.append(f"{name} sweep: {e}")
    return report


def main(args: Any) -> int:
    """`scotbed down [--backend local|compose|k8s] [RUN_ID]`."""
    report = down(args.run_id, args.backend)
    for line in report.lines():
        print(line)
    return 1 if report.errors else 0
