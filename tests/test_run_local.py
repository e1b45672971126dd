"""`scotbed run` end to end on the local backend: real brokers, real Locust, real Spark.

One small workload per routing algorithm, each checked by the analysis's
oracle (every notification delivered exactly once to every matching
subscriber and to no one else), plus the failure paths: a broker killed in
the middle of a run, and a run stopped with SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from scotbed.orchestrator.reproduce.effects import metric
from scotbed.orchestrator.run import RunOptions, run_spec
from scotbed.orchestrator.state import load_all, same_process

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "experiments" / "quickstart.yaml"

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SMALL = [
    "workload.subscribers=12",
    "workload.publishers=2",
    "workload.notifications_per_publisher=40",
    "workload.rate_per_minute=2400",
    "workload.symbols=20",
    "workload.selectivity=0.1",
    "timeouts.ready_s=90",
    "timeouts.quiescent_s=60",
]
TREE = ["topology.kind=tree", "topology.acyclic={kind: kary, fanout: 2, depth: 2}", "topology.connectivity=1"]
# slow iCOLs (80 notifications/s from the publishers against 5 messages/s per iCOL), so DNR's
# congestion detection fires and re-routes: with unlimited links it never would
SLOW_ICOLS = ["links.icol_capacity_msgs_per_s=5", "congestion.queue_threshold=3"]


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))


# BID's exact counts and exactly-once delivery on these two overlays are test_broker_processes's; its whole
# runs are the campaign test's below
@pytest.mark.parametrize(
    ("routing", "topology"),
    [
        ("flooding", []),
        ("rpf", TREE),
        ("snr", []),
        ("dnr", SLOW_ICOLS),
    ],
    ids=["flooding-fig2xK3", "rpf-tree7", "snr-fig2xK3", "dnr-fig2xK3"],
)
def test_run_delivers_exactly_once(routing: str, topology: list[str], tmp_path: Path, spark: Any) -> None:
    result = run_spec(
        QUICKSTART,
        [*SMALL, *topology, f"routing={routing}"],
        RunOptions(out=tmp_path / "runs", quiet=True),
    )
    n = result.summary["notifications"]
    assert result.ok, result.verdict
    assert n["expected_deliveries"] > 0
    assert n["delivered"] == n["expected_deliveries"]
    assert n["missing"] == n["duplicates"] == n["false_positives"] == 0
    assert n["published"] == 2 * 40
    if routing == "dnr":
        assert n["dynamic_copies"] > 0  # congestion was detected and notifications were re-routed
    run_dir = result.run_dir
    for name in ("spec.resolved.yaml", "topology.json", "report.html", "analysis/summary.json"):
        assert (run_dir / name).is_file(), name
    on_disk = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert on_disk["publish_schedule"] == result.summary["publish_schedule"]  # the run's additions
    resolved = yaml.safe_load((run_dir / "spec.resolved.yaml").read_text())
    assert resolved["run"]["java"] == on_disk["environment"]["java"]  # the JDK the analysis ran on
    assert on_disk["publish_schedule"]["notifications"] == n["published"]
    assert (run_dir / "workload" / "subscriptions.jsonl").stat().st_size > 0
    topology = json.loads((run_dir / "topology.json").read_text())
    assert len(list((run_dir / "events").glob("b-*.jsonl"))) == len(topology["brokers"])
    assert load_all() == []  # torn down: nothing left for `scotbed down`


@pytest.mark.parametrize("routing", ["covering-active", "covering-lazy", "covering-packing"])
def test_covering_family_with_an_unsubscription_burst(routing: str, tmp_path: Path, spark: Any) -> None:
    """Covering roots and covered subscriptions, then the broadest root is removed mid-run: the
    covered subscriptions it held back must be released (packed, for packing) without losing one."""
    result = run_spec(
        QUICKSTART,
        [
            *SMALL,
            *TREE,
            f"routing={routing}",
            "workload.subscribers=20",
            "workload.symbols=50",
            "workload.selectivity=0.02",
            "workload.notifications_per_publisher=60",
            "workload.rate_per_minute=1200",
            "workload.covering={degree: 30}",
            "workload.unsub_burst={count: 1, interval_ms: 300, start_s: 1}",
        ],
        RunOptions(out=tmp_path / "runs", quiet=True),
    )
    n, subs = result.summary["notifications"], result.summary["subscriptions"]
    assert result.ok, result.verdict
    assert n["missing"] == n["duplicates"] == n["false_positives"] == 0
    assert n["expected_deliveries"] > 0
    flooded = (subs["count"] + 1) * (7 - 1)  # what rpf sends: every (un)subscription to every broker
    # the active form has no such bound (covering.py): a subscription withdrawn by clean-up is sent
    # again, as a subscription, when its coverer leaves (the run's end unsubscribes every coverer)
    if routing != "covering-active":
        assert subs["ims_total"] < flooded, subs


def _cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "scotbed.orchestrator.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def _wait_for_phase(runs: Path, phase: str, timeout_s: float) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for status in runs.glob("*/locust/status.json"):
            try:
                if json.loads(status.read_text()).get("phase") == phase:
                    return status.parent.parent
            except json.JSONDecodeError:
                pass
        time.sleep(0.1)
    raise AssertionError(f"no run reached phase {phase!r} within {timeout_s} s")


def _slow_workload() -> list[str]:
    """Publishers that run for ~20 s, so there is time to break something in the middle."""
    return [
        *SMALL,
        "workload.notifications_per_publisher=200",
        "workload.rate_per_minute=600",
        "routing=snr",
    ]


def _sets(values: list[str]) -> list[str]:
    return [a for v in values for a in ("--set", v)]


def test_a_broker_killed_mid_run_fails_the_run_by_name(tmp_path: Path) -> None:
    env = {**os.environ, "SCOTBED_STATE_DIR": str(tmp_path / "state")}
    runs = tmp_path / "runs"
    proc = _cli("run", str(QUICKSTART), "--out", str(runs), "--quiet", *_sets(_slow_workload()), env=env)
    try:
        run_dir = _wait_for_phase(runs, "publishing", 120)
        (state,) = load_all()
        victim = next(p for p in state.processes if p.role == "broker:b-c-1")
        os.kill(victim.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, err
    assert "b-c-1" in err and "stopped during the run" in err
    assert str(run_dir) in err  # the partial run directory is kept and named
    logs = sorted((run_dir / "events").glob("b-*.jsonl"))
    assert len(logs) == 18
    for log in logs:  # every surviving broker flushed a parseable log
        for line in log.read_text().splitlines():
            json.loads(line)
    down = _cli("down", env=env)
    down.communicate(timeout=60)
    assert all(not same_process(p) for p in state.processes)


def test_sigterm_tears_down_and_keeps_the_logs(tmp_path: Path) -> None:
    env = {**os.environ, "SCOTBED_STATE_DIR": str(tmp_path / "state")}
    runs = tmp_path / "runs"
    proc = _cli("run", str(QUICKSTART), "--out", str(runs), "--quiet", *_sets(_slow_workload()), env=env)
    try:
        run_dir = _wait_for_phase(runs, "publishing", 120)
        (state,) = load_all()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert all(not same_process(p) for p in state.processes)
    assert load_all() == []
    assert len(list((run_dir / "events").glob("b-*.jsonl"))) == 18
    assert any((run_dir / "events").glob("locust-*.jsonl"))


def test_campaign_resumes_after_an_interruption_and_pools_its_repetitions(tmp_path: Path) -> None:
    """2 routings × 2 repetitions, stopped during its second run: the resumed campaign reruns only the
    unfinished cells, and every aggregate point is the mean of its two runs' summary values."""
    env = {**os.environ, "SCOTBED_STATE_DIR": str(tmp_path / "state")}
    campaign = tmp_path / "c.yaml"
    campaign.write_text(
        f"name: resume\nbase: {QUICKSTART}\nmatrix: {{routing: [snr, bid]}}\nrepetitions: 2\n"
        f"set: {json.dumps(SMALL)}\n"
    )
    out = tmp_path / "out"
    index = out / "resume" / "index.json"
    first = _cli("campaign", str(campaign), "--out", str(out), "--quiet", env=env)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if index.exists() and len(json.loads(index.read_text())["cells"]) == 1:
                break
            time.sleep(0.2)
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    cells = json.loads(index.read_text())["cells"]
    assert list(cells) == ["routing=snr,rep=0"] and cells["routing=snr,rep=0"]["status"] == "done"
    snr_run = cells["routing=snr,rep=0"]["run_dir"]
    assert load_all() == []  # the interrupted second run was torn down

    second = _cli("campaign", str(campaign), "--out", str(out), env=env)
    stdout, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    assert "[1/4 routing=snr,r0] skipped (finished earlier)" in err
    assert "[2/4 routing=snr,r1] publish" in err  # each cell's phases, named by the cell
    cells = json.loads(index.read_text())["cells"]
    assert cells["routing=snr,rep=0"]["run_dir"] == snr_run
    assert all(c["status"] == "done" for c in cells.values()) and len(cells) == 4
    runs = out / "resume" / "runs"
    assert {d.name for d in runs.iterdir() if (d / "analysis" / "summary.json").exists()} == {
        "routing=snr,r0",
        "routing=snr,r1",
        "routing=bid,r0",
        "routing=bid,r1",
    }
    for cell in cells.values():  # every repetition delivered exactly once
        n = json.loads((Path(cell["run_dir"]) / "analysis" / "summary.json").read_text())["notifications"]
        assert n["missing"] == n["duplicates"] == n["false_positives"] == 0, cell["run_dir"]
        assert n["delivered"] == n["expected_deliveries"] > 0, cell["run_dir"]
    report = out / "resume" / "report.html"
    assert stdout.strip().splitlines()[-1] == str(report)

    table = pd.read_parquet(out / "resume" / "analysis" / "aggregate.parquet")
    assert set(table["parameter"]) == {"routing"} and (table["n"] == 2).all()
    for _, row in table.iterrows():
        values = [
            metric(
                json.loads(
                    (runs / f"routing={row['series']},r{r}" / "analysis" / "summary.json").read_text()
                ),
                row["metric"],
            )
            for r in (0, 1)
        ]
        assert row["mean"] == pytest.approx(sum(values) / 2, rel=1e-12), row["metric"]
    html = report.read_text()
    assert all(f'href="runs/routing={r},r{i}/report.html"' in html for r in ("snr", "bid") for i in (0, 1))
