"""Peers on the sim backend (``scotbed run SPEC --backend sim``): the round simulator driven by the
steps of a run of peer processes (:func:`scotbed.vinifera.run.drive`), its ``peers`` block from the
simulator's records (:func:`scotbed.vinifera.metrics.summary`), and the per-backend peer bound.

One definition of the figures: on the fixed process run of ``tests/fixtures/peers_run`` the records'
summary is exactly the figures the Spark section gives on it (``peers_run_expected.json``, which
``tests/test_peers_spark.py`` holds Spark to). On a small gossip-built case the simulator and the
processes publish the same events to the same interested peers and both deliver every one once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scotbed import contract
from scotbed.broker.eventlog import read_events
from scotbed.experiment.spec import SpecError, parse_spec
from scotbed.experiment.spec_peers import MAX_PEER_PROCESSES, MAX_SIMULATED_PEERS
from scotbed.orchestrator import preflight
from scotbed.orchestrator.progress import QuietProgress
from scotbed.orchestrator.run import RunOptions, run_spec
from scotbed.vinifera import metrics
from scotbed.vinifera.analysis import report as peer_analysis
from scotbed.vinifera.analysis.section import failed_rounds

FIXTURES = Path(__file__).parent / "fixtures"


def _doc(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "v",
        "seed": 4,
        "topology": {"kind": "peers", "n": 8, "attributes": ["x"]},
        "routing": "vinifera",
        "routing_params": {"k_sw": 0, "k_f": 2},
        "workload": {
            "peers": {
                "subscriptions": "skewed",
                "events": "skewed",
                "width": 0.2,
                "warmup_rounds": 15,
                "rounds": 4,
                "events_per_round": 4,
            }
        },
    }
    doc.update(over)
    return doc


def _run(tmp_path: Path, doc: dict[str, Any], backend: str, out: str) -> tuple[dict[str, Any], Path]:
    path = tmp_path / f"{out}.yaml"
    path.write_text(yaml.safe_dump(doc))
    options = RunOptions(backend=backend, out=tmp_path / out, quiet=True)
    result = run_spec(path, [], options, QuietProgress())
    assert result.ok, result.verdict
    return json.loads((result.run_dir / contract.SUMMARY).read_text()), result.run_dir


def test_the_records_summary_is_the_spark_sections_figures_on_the_fixed_run() -> None:
    """Every key and value of the processes' Spark figures, from the records of the same logs (two
    peers killed, a capacity of 2 event messages per round: missed, dropped and the failed peers'
    oracle all count)."""
    run = FIXTURES / "peers_run"
    events = [e for f in sorted((run / contract.EVENTS_DIR).iterdir()) for e in read_events(f)]
    records, names = peer_analysis.records(events, failed_rounds(run))
    got = json.loads(json.dumps(metrics.summary(records, names)))
    want = json.loads((FIXTURES / "peers_run_expected.json").read_text())
    assert got == want
    assert (got["events"], got["dropped"], got["missed"]) == (24, 14, 24)


@pytest.mark.parametrize("routing", ["vinifera", "rendezvous-baseline"])
def test_a_peers_spec_runs_in_the_simulator_repeatably(tmp_path: Path, routing: str) -> None:
    """The same spec and seed give the same summary; every interested peer gets every event once;
    nothing is logged per message (the figures come from the simulator's records)."""
    first, run_dir = _run(tmp_path, _doc(routing=routing), "sim", "a")
    again, _ = _run(tmp_path, _doc(routing=routing), "sim", "b")
    assert first == again
    p = first["peers"]
    assert (p["events"], p["hit_ratio"], p["missed"], p["extra_deliveries"]) == (16, 1.0, 0, 0)
    assert first["correctness"] == {"ok": True, "missing": 0, "duplicates": 0}
    assert 0 < p["overhead"] < 1 and p["path_length"] >= p["tree_depth"] > 0
    assert not list((run_dir / contract.EVENTS_DIR).iterdir())
    assert (run_dir / contract.REPORT).read_text().startswith("<!doctype html>")


def test_churn_in_the_simulator_fails_peers_as_the_processes_do(tmp_path: Path) -> None:
    workload = dict(_doc()["workload"]["peers"], rounds=5, churn={"every": 2, "leaves": 1})
    summary, run_dir = _run(tmp_path, _doc(workload={"peers": workload}), "sim", "churn")
    faults = [json.loads(line) for line in (run_dir / contract.FAULTS).read_text().splitlines()]
    assert [f["kind"] for f in faults] == ["kill", "kill"] and summary["failed"] == 2
    assert summary["peers"]["events"] == 20 and summary["peers"]["extra_deliveries"] == 0


@pytest.mark.slow
@pytest.mark.spark
def test_the_simulator_and_the_processes_agree_on_a_small_case(tmp_path: Path) -> None:
    """Same spec, same seed: the same peers, subscriptions, contacts and events, so the same events
    reach the same interested peers (the oracle's ``want``) and both deliver every one exactly once.
    The overlay may differ: the simulator ticks the peers one by one and settles each tick's gossip
    before the next, processes tick all at once and gossip concurrently, so the views (and with them
    overhead, paths and loads) are each system's own. Both are within the figures' ranges."""
    doc = _doc()
    sim, _ = _run(tmp_path, doc, "sim", "sim")
    proc, _ = _run(tmp_path, doc, "local", "proc")
    s, p = sim["peers"], proc["peers"]
    for key in ("events", "hit_ratio", "hit_ratio_by_round", "missed", "extra_deliveries", "dropped"):
        assert s[key] == p[key], key
    assert sorted(s) == sorted(p) and sorted(s["load_cdf"]) == sorted(p["load_cdf"])
    assert sim["correctness"] == proc["correctness"] == {"ok": True, "missing": 0, "duplicates": 0}


def test_each_backend_bounds_the_peers_by_name() -> None:
    """Processes: at most MAX_PEER_PROCESSES on this host; the simulator: the paper's 1,000 and more,
    up to MAX_SIMULATED_PEERS, which the schema holds for every backend."""
    assert MAX_SIMULATED_PEERS >= 1000 > MAX_PEER_PROCESSES
    many = parse_spec(_doc(topology={"kind": "peers", "n": 1000, "attributes": ["x"]}))
    with pytest.raises(SpecError) as e:
        preflight.check(many, "local")
    assert str(e.value).startswith(
        f"topology.n: 1000 peers; the local backend runs at most {MAX_PEER_PROCESSES}"
    )
    assert "--backend sim" in str(e.value)
    assert preflight.check(many, "sim").backend == "sim"
    with pytest.raises(SpecError) as e:
        parse_spec(_doc(topology={"kind": "peers", "n": MAX_SIMULATED_PEERS + 1}))
    assert f"topology.n: {MAX_SIMULATED_PEERS + 1} is not allowed" in str(e.value)
