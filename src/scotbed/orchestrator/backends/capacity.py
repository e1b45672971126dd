"""Does this host have room for N broker processes? Checked before the local backend starts any.

A broker process takes about 52 MiB and 9 threads idle (measured: ``VmRSS``,
``Threads`` in ``/proc/PID/status``); :class:`BrokerFootprint` budgets for a
loaded one. The host offers ``MemAvailable`` and the smaller of
``RLIMIT_NPROC`` and the cgroup's ``pids.max`` (both count threads) minus
the tasks already running. An overlay that does not fit is refused before
anything starts, naming the limit and how to override it
(``SCOTBED_IGNORE_HOST_CAPACITY=1``, or a backend with more machines).
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

from scotbed.errors import UserError

OVERRIDE_ENV = "SCOTBED_IGNORE_HOST_CAPACITY"


@dataclass(frozen=True)
class BrokerFootprint:
    memory_mib: int = 80  # resident memory of a broker under load
    tasks: int = 12  # threads (gRPC pollers, asyncio, the event-log writer)


@dataclass(frozen=True)
class HostRoom:
    memory_mib: int | None  # MemAvailable; None = unknown
    tasks: int | None  # tasks this user may still start; None = unlimited or unknown


def problem(brokers: int, host: HostRoom, fp: BrokerFootprint = BrokerFootprint()) -> str | None:
    """Why ``brokers`` processes do not fit ``host``; None when they do."""
    need_mib, need_tasks = brokers * fp.memory_mib, brokers * fp.tasks
    if host.memory_mib is not None and need_mib > host.memory_mib:
        most = host.memory_mib // fp.memory_mib
        return (
            f"{brokers} local brokers need about {need_mib} MiB ({fp.memory_mib} MiB each), "
            f"the host has {host.memory_mib} MiB available (at most {most} brokers)"
        )
    if host.tasks is not None and need_tasks > host.tasks:
        return (
            f"{brokers} local brokers need about {need_tasks} tasks ({fp.tasks} threads each), "
            f"the host allows {host.tasks} more (at most {host.tasks // fp.tasks} brokers)"
        )
    return None


def _mem_available_mib() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _tasks_left() -> int | None:
    limits = []
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY:
        limits.append(soft)
    try:
        text = Path("/sys/fs/cgroup/pids.max").read_text().strip()
        if text != "max":
            limits.append(int(text))
    except (OSError, ValueError):
        pass
    if not limits:
        return None
    try:
        in_use = int(Path("/sys/fs/cgroup/pids.current").read_text())
    except (OSError, ValueError):
        in_use = sum(1 for p in Path("/proc").iterdir() if p.name.isdigit())
    return max(0, min(limits) - in_use)


def host_room() -> HostRoom:
    return HostRoom(_mem_available_mib(), _tasks_left())


def require(brokers: int) -> None:
    """Raise :class:`CapacityError` when ``brokers`` local processes do not fit this host."""
    if os.environ.get(OVERRIDE_ENV) == "1":
        return
    why = problem(brokers, host_room())
    if why is not None:
        raise CapacityError(
            f"backend local: {why}; use fewer brokers, --backend compose or k8s on bigger machines, "
            f"or set {OVERRIDE_ENV}=1 to start them anyway"
        )


class CapacityError(UserError):
    """The host cannot run the asked overlay as local processes (bad input: exit 2)."""
