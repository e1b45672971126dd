"""Is the broker waiting for the CPU? Event-loop lag and process CPU share, for the ``loop`` event.

Loop lag. A timer asks to wake every ``period_s``; how late it actually wakes is
how long any ready task (a received batch, the processing loop, a link sender)
waits for the loop at that moment — the broker's own backlog of work plus the
time the operating system did not schedule the process. On a host with more
runnable brokers than cores the second part dominates, and every delay the run
measures grows by it. That is what :mod:`scotbed.analysis.validity` looks for.

CPU share. ``time.process_time`` (user + system CPU of this process) over wall
time since the last sample: 1.0 is one core busy all the time. Summed over the
brokers of one host and divided by its cores, it is the host's CPU saturation.

Run-queue wait. Where Linux exposes ``/proc/thread-self/schedstat``, the loop thread's time spent
runnable but not running (waiting for a core) over the period is ``wait_ms``: the part of the lag
that is the host's, not the broker's own backlog. Elsewhere the field is absent.

The probe keeps running maxima and sums; :meth:`LoopProbe.take` returns the
period's figures (what the ``loop`` event carries) and starts a new period.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PROBE_PERIOD_S = 0.1  # how often the timer asks to wake; the lag resolution is the loop's, not this
SCHEDSTAT = Path("/proc/thread-self/schedstat")  # "on-cpu ns, run-queue wait ns, timeslices" (Linux)


def run_queue_wait_ns(path: Path = SCHEDSTAT) -> int | None:
    """The calling thread's total run-queue wait, or None where the kernel does not say."""
    try:
        return int(path.read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None


class LoopProbe:
    """Scheduled-vs-actual wake-ups of a periodic timer, and CPU time, aggregated per sampling period."""

    def __init__(
        self,
        period_s: float = PROBE_PERIOD_S,
        clock: Callable[[], float] = time.monotonic,
        cpu_clock: Callable[[], float] = time.process_time,
        wait_clock: Callable[[], int | None] = run_queue_wait_ns,
    ) -> None:
        self.period_s = period_s
        self._clock = clock
        self._cpu_clock = cpu_clock
        self._wait_clock = wait_clock
        self._since = clock()
        self._cpu_since = cpu_clock()
        self._wait_since = wait_clock()
        self._reset()

    def _reset(self) -> None:
        self._n = 0
        self._sum_s = 0.0
        self._max_s = 0.0

    def record(self, lag_s: float) -> None:
        """One wake-up that came ``lag_s`` late (a negative lag — clock granularity — counts as 0)."""
        lag = max(0.0, lag_s)
        self._n += 1
        self._sum_s += lag
        self._max_s = max(self._max_s, lag)

    def take(self) -> dict[str, Any]:
        """The ``loop`` event's fields for the period since the last call; starts the next period."""
        now, cpu, wait = self._clock(), self._cpu_clock(), self._wait_clock()
        wall = now - self._since
        share = (cpu - self._cpu_since) / wall if wall > 0 else 0.0
        fields: dict[str, Any] = {
            "lag_ms_max": round(self._max_s * 1000.0, 3),
            "lag_ms_mean": round(self._sum_s * 1000.0 / self._n, 3) if self._n else 0.0,
            "probes": self._n,
            "cpu": round(share, 4),
            "wall_ms": round(wall * 1000.0, 3),
        }
        if wait is not None and self._wait_since is not None:
            fields["wait_ms"] = round((wait - self._wait_since) / 1e6, 3)
        self._since, self._cpu_since, self._wait_since = now, cpu, wait
        self._reset()
        return fields

    async def run(self, every_s: float = 0.0, on_period: Callable[[], None] | None = None) -> None:
        """Forever: sleep ``period_s`` and record how late the wake-up was; and call ``on_period`` on the
        first wake-up at or past each multiple of ``every_s`` (the broker's samples), so that one timer
        serves both: every wake-up costs an idle process CPU, and an overlay has many idle brokers.
        The periods between calls average ``every_s`` and each lies within ``period_s`` of it."""
        due = self._clock() + every_s
        while True:
            asked = self._clock()
            await asyncio.sleep(self.period_s)
            now = self._clock()
            self.record(now - asked - self.period_s)
            if on_period is not None and now >= due:
                on_period()
                due += every_s
                if due <= now:  # a stall: the next period starts now, not in a burst of catch-up calls
                    due = now + every_s
