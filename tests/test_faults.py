"""Fault timeline: spec checks, windows, loss attribution, and a broker killed and restarted mid-publish."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from scotbed_cli import run_quickstart

from scotbed import topology
from scotbed.analysis.faultwindows import attribute, windows
from scotbed.orchestrator.faults import FaultSpec, check
from scotbed.orchestrator.spec import SpecError, parse_spec

S = 1_000_000_000


def _faults(*rows: dict[str, object]) -> list[FaultSpec]:
    return [FaultSpec.model_validate(r) for r in rows]


def test_a_timeline_is_checked_against_the_overlay() -> None:
    scot = topology.tree(topology.path(3))
    ids = {b.id for b in scot.brokers}

    def nbrs(b: str) -> set[str]:
        return {n.id for n in scot.neighbours(b)}

    ok = _faults(
        {"at_s": 1, "action": "kill", "broker": "b-v1-0"},
        {"at_s": 2, "action": "restart", "broker": "b-v1-0"},
        {"at_s": 1, "action": "cut", "broker": "b-v0-0", "neighbour": "b-v1-0"},
        {"at_s": 3, "action": "restore", "broker": "b-v0-0", "neighbour": "b-v1-0"},
    )
    assert check(ok, ids, nbrs) == []
    bad = _faults(
        {"at_s": 1, "action": "kill", "broker": "b-v1-0"},
        {"at_s": 1, "action": "cut", "broker": "b-v0-0", "neighbour": "b-v2-0"},
        {"at_s": 1, "action": "stop", "broker": "b-x-0"},
        {"at_s": 1, "action": "capacity", "broker": "b-v0-0", "neighbour": "b-v1-0"},
    )
    assert check(bad, ids, nbrs) == [
        "faults[0]: a kill needs a later restart of the same target",
        "faults[1].neighbour: 'b-v2-0' is not a neighbour of b-v0-0",
        "faults[1]: a cut needs a later restore of the same target",
        "faults[2].broker: 'b-x-0' is not a broker of this overlay",
        "faults[3].capacity_msgs_per_s: required for capacity, and only there",
    ]
    with pytest.raises(SpecError, match=r"faults\[0\]\.action: 'explode' is not allowed"):
        parse_spec({"name": "x", "faults": [{"at_s": 1, "action": "explode", "broker": "b"}]})


def test_losses_inside_a_fault_window_are_counted_apart(tmp_path: Path) -> None:
    records = [
        {"action": "kill", "target": "b-v1-0", "start_ns": 10 * S, "end_ns": 10 * S},
        {"action": "restart", "target": "b-v1-0", "start_ns": 12 * S, "end_ns": 13 * S},
    ]
    (w,) = windows(records)
    assert (w.start_ns, w.end_ns) == (10 * S, 13 * S) and w.covers(9 * S) and not w.covers(int(14.5 * S))
    (tmp_path / "faults.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (tmp_path / "analysis").mkdir()
    pd.DataFrame({"t_ns": [11 * S, 12 * S, 20 * S, 5 * S], "missing": [True, True, True, False]}).to_parquet(
        tmp_path / "analysis" / "correctness_offenders.parquet"
    )
    summary = {"notifications": {"missing": 3}, "correctness": {"missing": 3, "ok": False}}
    attribute(summary, tmp_path)
    assert (
        summary["notifications"]["missing"] == 1 and summary["notifications"]["missing_in_fault_windows"] == 2
    )
    assert summary["correctness"]["ok"] is False  # summary.json on disk: the end-to-end test below


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize(
    ("routing", "kind", "m"), [("flooding", "tree", 1), ("rpf", "tree", 1), ("snr", "scot", 2)]
)
def test_a_broker_killed_and_restarted_mid_publish_loses_nothing_outside_the_window(
    routing: str, kind: str, m: int, tmp_path: Path
) -> None:
    """The restarted broker's table comes back (scotbed.broker.rejoin), so routing with state recovers too."""
    timeline = (
        "faults=[{at_s: 1.5, action: kill, broker: b-v1-0}, {at_s: 3.0, action: restart, broker: b-v1-0}]"
    )
    sets = [
        f"topology.kind={kind}",
        f"topology.connectivity={m}",
        "topology.acyclic={kind: path, n: 3}",
        f"routing={routing}",
        "workload.placement=edge",
        "workload.subscribers=4",
        "workload.publishers=1",
        "workload.notifications_per_publisher=60",
        "workload.rate_per_minute=600",
        timeline,
    ]
    proc = run_quickstart(tmp_path, sets, timeout=1500)
    (run,) = list((tmp_path / "runs").iterdir())
    assert proc.returncode == 0, proc.stderr[-3000:]
    done = [json.loads(line)["action"] for line in (run / "faults.jsonl").read_text().splitlines()]
    assert done == ["kill", "restart"]
    summary = json.loads((run / "analysis" / "summary.json").read_text())
    n = summary["notifications"]
    assert n["missing"] == 0 and len(n["fault_windows"]) == 1
    assert n["delivered"] + n["missing_in_fault_windows"] >= n["expected_deliveries"]
    lost = n["missing_in_fault_windows"]
    print(f"delivered {n['delivered']} of {n['expected_deliveries']}, lost in the window {lost}")
