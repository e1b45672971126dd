"""Is a child process still doing its work? One that ended says how; one that is frozen says so.

The run watches its brokers (local backend) and its Locust master and workers on every poll of
every wait, so a participant that was killed, crashed or was stopped (SIGSTOP: alive, but it never
answers) is named within a poll, instead of the run waiting out a phase's whole timeout.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

STOPPED_STATES = ("T", "t")  # /proc/PID/stat: stopped by a signal, or by a tracer


def frozen(pid: int) -> bool:
    """The process is stopped (SIGSTOP, SIGTSTP) or held by a tracer; False where /proc is absent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rpartition(")")[2].split()  # the command name in parentheses may hold spaces
    return bool(fields) and fields[0] in STOPPED_STATES


def how_it_ended(code: int) -> str:
    """A return code in words: ``exited with code 1``, ``killed by SIGKILL``."""
    if code >= 0:
        return f"exited with code {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def problem(proc: subprocess.Popen[bytes]) -> str | None:
    """Why ``proc`` is not doing its work (ended, or frozen), or None while it runs."""
    code = proc.poll()
    if code is not None:
        return how_it_ended(code)
    if frozen(proc.pid):
        return f"frozen (pid {proc.pid} is stopped, e.g. by SIGSTOP): it runs nothing and answers nothing"
    return None
