"""Strict reading of user input: spec types, YAML duplicates, encodings, filter values, wire attributes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scotbed.filters import Filter, FilterError
from scotbed.orchestrator.spec import SpecError, load_spec, parse_spec
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.wire import notification_to_pb, publication_from_notification


def _problems(doc: dict[str, object]) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse_spec({"name": "x", **doc})
    return err.value.problems


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        ({"workload": {"subscribers": True}}, "workload.subscribers: True"),
        ({"workload": {"rate_per_minute": float("inf")}}, "workload.rate_per_minute: inf"),
        ({"workload": {"selectivity": float("nan")}}, "workload.selectivity: nan"),
        ({"workload": {"subscribers": 0}}, "workload.subscribers: 0"),
        ({"seed": "3"}, "seed: '3'"),
    ],
)
def test_spec_values_are_strictly_typed_and_finite(doc: dict[str, object], problem: str) -> None:
    problems = _problems(doc)
    assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_numbers_keep_working_where_they_are_meant() -> None:
    spec = parse_spec(
        {"name": "x", "workload": {"time_scale": 2, "rate_per_minute": 60}}, ["links.capacity_msgs_per_s=2e3"]
    )
    assert spec.workload.time_scale == 2.0 and spec.links.capacity_msgs_per_s == 2000.0


def test_a_duplicate_yaml_key_is_refused_naming_the_key_and_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: x\nworkload:\n  subscribers: 5\n  publishers: 1\n  subscribers: 50\n")
    with pytest.raises(
        SpecError, match=r"s\.yaml:5:3: not valid YAML: duplicate key 'subscribers' \(first at line 3\)"
    ):
        load_spec(path)


def test_a_spec_that_is_not_utf8_is_one_line_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_bytes(b"name: x\n# caf\xe9\n")
    with pytest.raises(SpecError, match=r"s\.yaml:2: not UTF-8 text \(byte 0xe9 at offset 13\)"):
        load_spec(path)
    proc = subprocess.run(
        [sys.executable, "-m", "scotbed.orchestrator.cli", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "not UTF-8" in proc.stderr


def test_between_refuses_nan_bounds() -> None:
    for text in ("x between [nan, 1]", "x between [1, nan]"):
        with pytest.raises(FilterError, match="finite"):
            Filter.from_json([{"attr": "x", "op": "between", "value": [float("nan"), 1.0]}])
        with pytest.raises(FilterError, match="finite"):
            Filter.from_json([{"attr": "x", "op": "<", "value": float("inf")}])
        with pytest.raises(FilterError):
            Filter.parse(text)


def test_a_notification_attribute_with_an_empty_name_is_refused_both_ways() -> None:
    with pytest.raises(FilterError, match="empty name"):
        notification_to_pb("p", "pub", {"": 1})
    n = pb.Notification(pub_id="p")
    n.attrs[""].i = 1
    with pytest.raises(FilterError, match="empty name"):
        publication_from_notification(n, "b")
