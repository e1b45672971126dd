"""Strict reading of user input: spec types, YAML duplicates, encodings, filter values, wire attributes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from scotbed_cli import QUICKSTART, scotbed

from scotbed import bounds
from scotbed.experiment.spec import SpecError, load_spec, parse_spec
from scotbed.filters import INT_MAX, INT_MIN, Filter, FilterError
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.wire import notification_to_pb, publication_from_notification, value_to_pb


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


# --- specs `validate` accepted and `run` then failed on, or that hung both (issue 39) ----------

BIG = 10**40


def _refused(proc: subprocess.CompletedProcess[str], *parts: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    for part in parts:
        assert part in proc.stderr, proc.stderr


def _validate_and_run(tmp_path: Path, spec: Path, *argv: str) -> list[subprocess.CompletedProcess[str]]:
    """`scotbed validate` and `scotbed run` of ``spec``; a run must stop before any broker starts."""
    out = tmp_path / "runs"
    procs = [
        scotbed(tmp_path, "validate", str(spec), *argv, timeout=120),
        scotbed(tmp_path, "run", str(spec), *argv, "--out", str(out), "--quiet", timeout=120),
    ]
    assert not [p for p in out.rglob("*") if p.is_file() and p.parent.name == "events"]  # no broker ran
    return procs


@pytest.mark.parametrize(
    ("key", "bound"),
    [
        ("workload.symbols", bounds.MAX_SYMBOLS),
        ("workload.subscribers", bounds.MAX_SUBSCRIBERS),
        ("workload.publishers", bounds.MAX_PUBLISHERS),
        ("workload.notifications_per_publisher", bounds.MAX_NOTIFICATIONS),
        ("workload.hrp", bounds.MAX_NOTIFICATIONS),
        ("topology.acyclic", bounds.MAX_BROKERS),
        ("topology.connectivity", bounds.MAX_BROKERS),
    ],
)
def test_a_count_beyond_its_bound_is_refused_at_once(tmp_path: Path, key: str, bound: int) -> None:
    value = {
        "workload.hrp": f"{{rate_per_minute: 60, notifications: {BIG}}}",
        "topology.acyclic": f"{{kind: kary, fanout: 2, depth: {BIG}}}",
    }.get(key, str(BIG))
    path = key + (
        ".notifications" if key == "workload.hrp" else ".depth" if key == "topology.acyclic" else ""
    )
    for proc in _validate_and_run(tmp_path, QUICKSTART, "--set", f"{key}={value}"):
        _refused(proc, f"{path}: {BIG} is not allowed: input should be less than or equal to {bound}")


def test_churn_of_too_many_cycles_is_refused_naming_the_rate(tmp_path: Path) -> None:
    churn = "workload.churn={rate_per_minute: 6e7, duration_s: 600000}"  # both within their own bounds
    proc = scotbed(tmp_path, "validate", str(QUICKSTART), "--set", churn, timeout=120)
    _refused(
        proc,
        "workload.churn.rate_per_minute: 6e+07 per minute from 0 s to ",
        f"unsubscribe/re-subscribe cycles; at most {bounds.MAX_CHURN_CYCLES}",
    )


@pytest.mark.parametrize(
    ("key", "value", "bound"),
    [
        ("seed", str(2**64), bounds.MAX_SEED),
        ("workload.rate_per_minute", "1e300", bounds.MAX_RATE_PER_S * 60),
        ("workload.start_spread_s", "1e300", bounds.MAX_SECONDS),
        ("workload.drain_s", "1e300", bounds.MAX_SECONDS),
        ("timeouts.run_s", "1e300", bounds.MAX_SECONDS),
        ("links.capacity_msgs_per_s", "1e300", bounds.MAX_RATE_PER_S),
        ("brokers.service_us", "1e300", bounds.MAX_SERVICE_US),
        ("analysis.settle_ms", "1e300", bounds.MAX_SECONDS * 1000),
    ],
)
def test_a_time_rate_or_seed_beyond_its_bound_is_refused(key: str, value: str, bound: int) -> None:
    """A week of seconds, a million messages a second, a 64-bit seed: beyond, asyncio's timers overflow,
    a rate divides to zero gaps, and a seed no longer fits what numpy and Spark hold."""
    with pytest.raises(SpecError) as e:
        load_spec(QUICKSTART, [f"{key}={value}"])
    assert f"{key}: " in str(e.value) and f"less than or equal to {bound}" in str(e.value)


def test_a_time_scale_beyond_its_bounds_is_refused(tmp_path: Path) -> None:
    for value, bound in (
        ("1e300", f"less than or equal to {bounds.MAX_TIME_SCALE:g}"),
        ("1e-300", "greater"),
    ):
        proc = scotbed(
            tmp_path, "validate", str(QUICKSTART), "--set", f"workload.time_scale={value}", timeout=120
        )
        _refused(proc, "workload.time_scale: ", f"is not allowed: input should be {bound}")


def test_a_file_name_with_a_nul_byte_is_refused_naming_the_key(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(QUICKSTART.read_text().replace("  symbols: 50\n", '  csv: ["quotes\\0.csv"]\n'))
    for proc in _validate_and_run(tmp_path, spec):
        _refused(
            proc, "workload.csv[0]: 'quotes\\x00.csv' is not allowed: a file name cannot contain a NUL byte"
        )


def test_zero_workers_are_refused_before_anything_runs(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    proc = scotbed(tmp_path, "run", str(QUICKSTART), "--workers", "0", "--out", str(out), timeout=120)
    _refused(proc, "argument --workers: '0' is not a number of worker processes (a whole number >= 1)")
    assert not out.exists()


def test_a_calibration_of_zero_runs_is_refused_before_anything_runs(tmp_path: Path) -> None:
    runs, out = tmp_path / "runs", tmp_path / "cal.json"
    proc = scotbed(
        tmp_path, "calibrate", "--repetitions", "0", "--runs", str(runs), "--out", str(out), timeout=120
    )
    _refused(proc, "argument --repetitions: '0' is not a number of runs (a whole number >= 1)")
    assert not runs.exists() and not out.exists()


def test_yaml_nested_without_end_or_with_endless_numbers_is_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    for text, message in (
        (
            "name: x\nrouting_params: {a: " + "[" * 100_000 + "]" * 100_000 + "}\n",
            "nested too deeply to parse",
        ),
        ("name: x\nseed: " + "9" * 5000 + "\n", "spec.yaml: not valid YAML: "),
        (
            "name: x\nworkload: {subscribers: 0x" + "f" * 5000 + "}\n",
            "an integer of 20000 bits is not allowed",
        ),
    ):
        spec.write_text(text)
        _refused(scotbed(tmp_path, "validate", str(spec), timeout=120), message)


def test_a_campaign_of_endless_repetitions_is_refused(tmp_path: Path) -> None:
    campaign = tmp_path / "c.yaml"
    campaign.write_text(f"name: c\nbase: {QUICKSTART}\nmatrix: {{seed: [1]}}\nrepetitions: 100000000\n")
    proc = scotbed(tmp_path, "campaign", str(campaign), "--out", str(tmp_path / "runs"), timeout=120)
    _refused(
        proc,
        "repetitions: 100000000 is not allowed: "
        f"input should be less than or equal to {bounds.MAX_REPETITIONS}",
    )


def test_every_spec_bound_is_documented_with_its_value() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "faults-and-limits.md").read_text()
    for name in (n for n in vars(bounds) if n.isupper()):
        value = getattr(bounds, name)
        rows = [line for line in doc.splitlines() if f"`{name}`" in line]
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        assert len(rows) == 1 and shown in rows[0], (name, rows)


def test_quote_files_that_are_not_regular_files_are_refused_without_reading_them(tmp_path: Path) -> None:
    fifo = tmp_path / "quotes.csv"
    os.mkfifo(fifo)
    for name in (str(fifo), "/dev/zero"):
        csv = f"workload.csv=[{name}]"
        proc = scotbed(tmp_path, "validate", str(QUICKSTART), "--set", csv, timeout=120)
        _refused(proc, f"workload: {name}: not a regular file (a device, FIFO or socket); a CSV file")


def test_the_value_range_of_filters_is_the_wires_own() -> None:
    assert pb.Value(i=INT_MAX).i == INT_MAX and pb.Value(i=INT_MIN).i == INT_MIN
    for outside in (INT_MAX + 1, INT_MIN - 1):
        with pytest.raises(ValueError):
            pb.Value(i=outside)
        with pytest.raises(FilterError, match="outside the 64-bit integers"):
            value_to_pb(outside)
        with pytest.raises(FilterError, match="outside the 64-bit integers"):
            Filter.from_json([{"attr": "x", "op": "between", "value": sorted([0, outside])}])


def test_a_quote_file_the_csv_reader_cannot_split_names_its_line(tmp_path: Path) -> None:
    quotes = tmp_path / "quotes.csv"
    header = "Date,Open,High,Low,Close,Adj Close,Volume,Symbol\n"
    quotes.write_text(header + '2020-01-02,1,2,1,1.5,1.5,100,"' + "A" * 200_000 + '"\n')
    proc = scotbed(tmp_path, "validate", str(QUICKSTART), "--set", f"workload.csv=[{quotes}]", timeout=120)
    _refused(proc, f"workload: {quotes}:2: not CSV: field larger than field limit")


@pytest.mark.parametrize(
    ("spec", "key", "bound"),
    [
        ("self-organising.yaml", "topology.self_organising.bloom_bits", bounds.MAX_BLOOM_BITS),
        ("self-organising.yaml", "topology.self_organising.cache_size", bounds.MAX_INTEREST_CACHE),
        ("vinifera.yaml", "workload.peers.rounds", bounds.MAX_PEER_ROUNDS),
        ("vinifera.yaml", "workload.peers.events_per_round", bounds.MAX_PEER_EVENTS_PER_ROUND),
    ],
)
def test_overlay_and_peer_sizes_beyond_their_bounds_are_refused(
    tmp_path: Path, spec: str, key: str, bound: int
) -> None:
    path = QUICKSTART.with_name(spec)
    proc = scotbed(tmp_path, "validate", str(path), "--set", f"{key}={BIG}", timeout=120)
    _refused(proc, f"{key}: {BIG} is not allowed: input should be less than or equal to {bound}")
