"""Did the publishers keep to their schedule? Lag = sent − intended time of each publication.

An open-loop publisher that cannot reach its rate sends late (it catches up in
batches), so delays measured from the intended time grow for a reason that is
not the routing's. A run whose publishers fell more than :data:`BEHIND_MS`
behind gets a warning, and ``analysis/summary.json`` gets ``publish_schedule`` (the run writes it).
Publications intended inside a fault window are left out (``in_fault_windows`` counts them): their
publisher may have waited for its broker to serve again, which says nothing about the host.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scotbed.analysis.faultwindows import Window

BEHIND_MS = 1000.0


def publisher_lag(publications: Path, windows: Sequence[Window] = ()) -> dict[str, Any]:
    """Lag statistics from ``workload/publications.jsonl`` (lines with ``ts_ns``, ``intended_ns``),
    without the publications intended inside one of the fault ``windows``."""
    lags: list[float] = []
    worst: dict[str, float] = {}
    excused = 0
    if publications.exists():
        with publications.open() as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                    intended = int(rec["intended_ns"])
                    lag = (int(rec["ts_ns"]) - intended) / 1e6
                except (ValueError, KeyError, TypeError):
                    continue
                if any(w.covers(intended) for w in windows):
                    excused += 1
                    continue
                lags.append(lag)
                name = str(rec.get("publisher", ""))
                worst[name] = max(worst.get(name, lag), lag)
    lags.sort()
    behind = sorted(p for p, lag in worst.items() if lag > BEHIND_MS)
    return {
        "notifications": len(lags),
        "max_lag_ms": round(lags[-1], 1) if lags else 0.0,
        "p99_lag_ms": round(lags[min(len(lags) - 1, int(0.99 * len(lags)))], 1) if lags else 0.0,
        "late": sum(1 for lag in lags if lag > BEHIND_MS),
        "behind_ms": BEHIND_MS,
        "publishers_behind": behind,
        "in_fault_windows": excused,
    }


def warning(lag: dict[str, Any]) -> str | None:
    if not lag["publishers_behind"]:
        return None
    names = lag["publishers_behind"]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return (
        f"{len(names)} publisher(s) fell behind schedule (up to {lag['max_lag_ms'] / 1000:.1f} s; "
        f"{lag['late']} of {lag['notifications']} notifications > {BEHIND_MS / 1000:.0f} s late): {shown}; "
        "delays from the intended time include this lag — lower workload.rate_per_minute or add workers"
    )
