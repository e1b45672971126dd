"""Publishers that fall behind their schedule are measured, warned about and summarised."""

from __future__ import annotations

import json
from pathlib import Path

from scotbed.analysis.faultwindows import GRACE_S, Window
from scotbed.orchestrator.schedule import publisher_lag, warning


def _pubs(path: Path, rows: list[tuple[str, int, int]]) -> Path:
    path.write_text(
        "".join(
            json.dumps({"publisher": p, "intended_ns": i, "ts_ns": t, "pub_id": "x"}) + "\n"
            for p, i, t in rows
        )
        + "{not json\n"
    )
    return path


def test_lag_per_publisher_and_the_warning_names_who_fell_behind(tmp_path: Path) -> None:
    ms = 1_000_000
    rows = [("p0", k * 100 * ms, k * 100 * ms + 2 * ms) for k in range(50)]  # 2 ms late: on time
    rows += [("p1", k * 100 * ms, k * 100 * ms + k * 60 * ms) for k in range(50)]  # 60 ms more each: 2.94 s
    lag = publisher_lag(_pubs(tmp_path / "publications.jsonl", rows))
    assert lag["notifications"] == 100 and lag["publishers_behind"] == ["p1"]
    assert lag["max_lag_ms"] == 2940.0 and lag["late"] == 33  # k = 17..49
    text = warning(lag)
    assert text is not None and "1 publisher(s) fell behind schedule (up to 2.9 s; 33 of 100" in text
    assert "): p1; delays from the intended time include this lag" in text


def test_on_time_publishers_get_no_warning(tmp_path: Path) -> None:
    """The summary's ``publish_schedule`` on disk: tests/test_run_local.py (the run writes it)."""
    lag = publisher_lag(_pubs(tmp_path / "publications.jsonl", [("p0", 0, 5_000_000)]))
    assert warning(lag) is None and lag["max_lag_ms"] == 5.0
    assert publisher_lag(tmp_path / "missing.jsonl")["notifications"] == 0


def test_a_publisher_that_waited_for_its_broker_inside_a_fault_window_is_not_behind(tmp_path: Path) -> None:
    """Its broker was killed: the quotes due meanwhile went out once it served again, seconds late."""
    s = 1_000_000_000
    rows = [("p0", k * s // 10, k * s // 10 + 1_000_000) for k in range(100)]  # on time
    rows = [(p, i, max(t, 6 * s) if 2 * s <= i < 6 * s else t) for p, i, t in rows]  # held 2..6 s
    path = _pubs(tmp_path / "publications.jsonl", rows)
    assert publisher_lag(path)["publishers_behind"] == ["p0"]
    lag = publisher_lag(path, [Window("b-v1-0", int((2 + GRACE_S) * s), int((6 - GRACE_S) * s) - 1)])
    assert (lag["publishers_behind"], lag["in_fault_windows"], lag["notifications"]) == ([], 40, 60)
    assert warning(lag) is None
