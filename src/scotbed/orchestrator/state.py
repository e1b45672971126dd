"""A registry of what live runs have started, so `scotbed down` can remove it later.

Each run writes one JSON file under the state directory (``$SCOTBED_STATE_DIR``,
default ``~/.local/state/scotbed/runs``) as soon as it starts anything, and
updates it as it goes: local broker and Locust process ids with their start
times (so a reused pid is never killed), compose project names, Kubernetes
namespaces and contexts. A clean teardown deletes the file; a crashed or
killed run leaves it behind for `scotbed down`.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


def state_dir() -> Path:
    base = os.environ.get("SCOTBED_STATE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "scotbed" / "runs"


@dataclass
class ProcessRecord:
    pid: int
    start_ticks: int | None  # field 22 of /proc/PID/stat: tells a reused pid apart
    role: str  # "broker:b-a-0", "locust-master", ...


@dataclass
class RunState:
    run_id: str
    backend: str
    run_dir: str
    processes: list[ProcessRecord] = field(default_factory=list)
    compose_project: str | None = None
    compose_file: str | None = None
    k8s_namespace: str | None = None
    k8s_context: str | None = None

    @property
    def path(self) -> Path:
        return state_dir() / f"{self.run_id}.json"

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(self.path)

    def add_process(self, pid: int, role: str) -> None:
        self.processes.append(ProcessRecord(pid, process_start_ticks(pid), role))
        self.save()

    def forget(self) -> None:
        self.path.unlink(missing_ok=True)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RunState:
        procs = [ProcessRecord(**p) for p in doc.pop("processes", [])]
        return cls(**doc, processes=procs)


def load_all() -> list[RunState]:
    out: list[RunState] = []
    d = state_dir()
    if not d.is_dir():
        return out
    for p in sorted(d.glob("*.json")):
        try:
            out.append(RunState.from_json(json.loads(p.read_text())))
        except (OSError, ValueError, TypeError):
            continue
    return out


def process_start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, or None where /proc has no answer."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):  # a zombie has exited; only its parent's wait is missing
        return None
    return int(fields[19])


def same_process(rec: ProcessRecord) -> bool:
    """True when ``rec.pid`` is still the process the run started."""
    ticks = process_start_ticks(rec.pid)
    if ticks is None:
        return False
    return rec.start_ticks is None or ticks == rec.start_ticks
