"""Malformed lines in a broker's event log: the correctness verdict fails, naming each log and its count.

A broker writes whole lines and flushes every one on a graceful stop (:mod:`scotbed.broker.eventlog`),
so a line of its log that does not parse, or lacks ``ts_ns``/``ev``, is lost data: events the metrics
and the oracle's propagation trace would have read. Whether a log was cut mid-line at its end or
garbled in its middle, the run's verdict cannot be trusted. The one exception is a broker the run
killed on purpose (a ``kill`` in ``faults.jsonl``): SIGKILL may cut the chunk it was writing, so each
kill excuses one malformed line of that broker's log (named, not failed); its losses fall inside the
kill's fault window (:mod:`scotbed.analysis.faultwindows`). Client logs are not judged here: an
unreadable receive line is named and excused as such (:mod:`scotbed.analysis.unreadable`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def broker_of(path: str) -> str:
    """The process whose log ``path`` is (``events/<process>.jsonl[.gz]``, contract.events_file)."""
    return Path(path).name.removesuffix(".gz").removesuffix(".jsonl")


def unexcused(malformed: Mapping[str, int], brokers: set[str], kills: Mapping[str, int]) -> dict[str, int]:
    """Log file name -> its malformed lines beyond those its broker's kills excuse, for the brokers'
    logs among ``malformed`` (path -> malformed lines) that have any."""
    out: dict[str, int] = {}
    for path, n in sorted(malformed.items()):
        broker = broker_of(path)
        left = n - kills.get(broker, 0)
        if broker in brokers and left > 0:
            out[Path(path).name] = left
    return out


def reason(bad: Mapping[str, int]) -> str:
    """The verdict's reason for the malformed broker log lines ``bad`` (file name -> lines)."""
    logs = ", ".join(f"events/{name}: {n} line(s)" for name, n in bad.items())
    return f"malformed lines in broker event logs (data lost, the verdict cannot be trusted): {logs}"
