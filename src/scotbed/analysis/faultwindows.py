"""Fault windows: deliveries lost inside a declared fault window are counted apart from the others.

``faults.jsonl`` (written by :mod:`scotbed.orchestrator.faults` as the timeline runs) records when
each action happened. A *window* runs from a kill/stop/cut to its restart/restore being done,
widened by :data:`GRACE_S` on both sides (publications in flight at the fault). A restart is done
once the broker serves, its links are up both ways and the clients that lost their sessions with
it have opened them again (their ``session`` events, state ``restored``, in the client logs:
:mod:`scotbed.workloads.users`), whichever comes last. The analysis
attributes the oracle's missing deliveries before it writes ``summary.json`` and renders the
report, so both carry the same counts and the same verdict.
"""

from __future__ import annotations

import gzip
import json
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scotbed import contract

GRACE_S = 1.0
OPENS = {"kill": "restart", "stop": "restart", "cut": "restore"}  # the action that closes each opening one


@dataclass(frozen=True)
class Window:
    target: str
    start_ns: int
    end_ns: int

    def covers(self, t_ns: int) -> bool:
        grace = int(GRACE_S * 1e9)
        return self.start_ns - grace <= t_ns <= self.end_ns + grace


def windows(
    records: list[dict[str, Any]], restored: Mapping[str, Iterable[int]] | None = None
) -> list[Window]:
    """Fault windows from the executed timeline (``faults.jsonl`` records, in order); ``restored``
    (broker -> when a client's session there was open again) ends a restart's window no earlier than
    the last session opened again before the target's next restart."""
    open_at: dict[str, int] = {}
    out = []
    for r in records:
        target = r["target"]
        if r["action"] in OPENS:
            open_at.setdefault(target, r["start_ns"])
        elif r["action"] in OPENS.values() and target in open_at:
            closes = [q["start_ns"] for q in records if q["target"] == target and q["action"] == r["action"]]
            until = min((t for t in closes if t > r["start_ns"]), default=math.inf)
            back = [t for t in (restored or {}).get(target, ()) if r["start_ns"] <= t < until]
            out.append(Window(target, open_at.pop(target), max([r["end_ns"], *back])))
    now = time.time_ns()
    out += [Window(t, s, now) for t, s in open_at.items()]  # never closed: open until the end
    return out


def of_run(run_dir: Path) -> list[Window]:
    """The run's fault windows, their restarts ended no earlier than the sessions opened again (none
    without ``faults.jsonl``: the client logs are read only then)."""
    recs = records(run_dir)
    return windows(recs, restored(run_dir)) if recs else []


def restored(run_dir: Path) -> dict[str, list[int]]:
    """Broker -> when a client's session there was open again (``session`` events, state ``restored``,
    of the client logs); an unreadable line is skipped (:mod:`scotbed.analysis.unreadable` names those)."""
    out: dict[str, list[int]] = {}
    for path in sorted((run_dir / contract.EVENTS_DIR).glob(f"{contract.CLIENT_PROCESS_PREFIX}*")):
        with gzip.open(path, "rt") if path.suffix == ".gz" else path.open(errors="replace") as fh:
            for line in fh:
                if f'"{contract.SESSION}"' not in line:
                    continue
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(e, dict) or not isinstance(e.get("ts_ns"), int):
                    continue
                if e.get("ev") == contract.SESSION and e.get("state") == "restored":
                    out.setdefault(str(e.get("broker")), []).append(e["ts_ns"])
    return out


def records(run_dir: Path) -> list[dict[str, Any]]:
    """The executed fault timeline (``faults.jsonl``), in order; none for a run without faults."""
    path = run_dir / contract.FAULTS
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def kills(recs: list[dict[str, Any]]) -> dict[str, int]:
    """Broker -> how many times the timeline killed it (SIGKILL)."""
    out: dict[str, int] = {}
    for r in recs:
        if r["action"] == "kill":
            out[r["target"]] = out.get(r["target"], 0) + 1
    return out


def attribute(summary: dict[str, Any], run_dir: Path) -> None:
    """Split the missing deliveries of ``summary`` (a summary dict, changed in place) into inside and
    outside the fault windows; nothing without ``faults.jsonl`` and the oracle's offenders."""
    path = run_dir / contract.FAULTS
    offenders = run_dir / contract.OFFENDERS
    if not path.exists() or not offenders.exists():
        return
    import pandas as pd

    wins = of_run(run_dir)
    pairs = pd.read_parquet(offenders, columns=["t_ns", "missing"])
    times = pairs.loc[pairs["missing"], "t_ns"].astype("int64")
    inside = int(sum(1 for t in times if any(w.covers(int(t)) for w in wins)))
    outside = len(times) - inside
    n, c = summary.setdefault("notifications", {}), summary.setdefault("correctness", {})
    n["missing_in_fault_windows"] = c["missing_in_fault_windows"] = inside
    c["missing"] = outside
    # those the drain deadline cut off are undelivered at stop (still queued), not missing
    n["missing"] = max(0, outside - int(n.get("undelivered_at_stop", 0)))
    n["fault_windows"] = [{"target": w.target, "start_ns": w.start_ns, "end_ns": w.end_ns} for w in wins]
    c["ok"] = outside == 0 and not c.get("duplicates") and not c.get("false_positives")
    c["ok"] = c["ok"] and not c.get("malformed_broker_lines")
