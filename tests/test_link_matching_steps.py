"""Matching steps by hop count from broker event logs (a known answer: a 3-broker path, two notifications)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scotbed.analysis.events import read_events
from scotbed.analysis.matching_steps import steps_by_hops

pytestmark = pytest.mark.spark


def _log(path: Path, node: str, events: list[dict[str, Any]]) -> str:
    path.write_text(
        "".join(json.dumps({"ts_ns": i + 1, "node": node, **e}) + "\n" for i, e in enumerate(events))
    )
    return str(path)


def test_steps_are_grouped_by_the_hops_the_notification_had_travelled(tmp_path: Path, spark: Any) -> None:
    # p1 is published at b-0 and travels b-0 -> b-1 -> b-2; p2 is published at b-2 and reaches b-1 only
    logs = [
        _log(
            tmp_path / "b-0.jsonl",
            "b-0",
            [
                {"ev": "notif_in", "pub_id": "p1", "link": "", "hops": 0},
                {"ev": "match", "pub_id": "p1", "us": 5.0, "n": 1, "steps": 9},
            ],
        ),
        _log(
            tmp_path / "b-1.jsonl",
            "b-1",
            [
                {"ev": "notif_in", "pub_id": "p1", "link": "b-0", "hops": 1},
                {"ev": "match", "pub_id": "p1", "us": 3.0, "n": 0, "steps": 4},
                {"ev": "notif_in", "pub_id": "p2", "link": "b-2", "hops": 1},
                {"ev": "match", "pub_id": "p2", "us": 3.0, "n": 0, "steps": 6},
            ],
        ),
        _log(
            tmp_path / "b-2.jsonl",
            "b-2",
            [
                {"ev": "notif_in", "pub_id": "p1", "link": "b-1", "hops": 2},
                {"ev": "match", "pub_id": "p1", "us": 1.0, "n": 1, "steps": 2},
                {"ev": "notif_in", "pub_id": "p2", "link": "", "hops": 0},
                {"ev": "match", "pub_id": "p2", "us": 1.0, "n": 0, "steps": 7},
                {"ev": "match", "pub_id": "p3", "us": 1.0, "n": 0},  # an engine without steps: not counted
            ],
        ),
    ]
    events, _ = read_events(spark, logs)
    assert steps_by_hops(events).to_json() == {
        "matches": 5,
        "steps_mean": 5.6,
        "by_hops": {
            "0": {"matches": 2, "steps_mean": 8.0, "steps_max": 9},
            "1": {"matches": 2, "steps_mean": 5.0, "steps_max": 6},
            "2": {"matches": 1, "steps_mean": 2.0, "steps_max": 2},
        },
    }
    no_steps, _ = read_events(spark, [logs[2]])
    assert steps_by_hops(no_steps.where("steps IS NULL")).to_json() is None
