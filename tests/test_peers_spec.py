"""``topology: {kind: peers}`` in the spec (validation, routing_params onto PeerConfig), the peers'
analysis from event logs (the oracle with failures), and one ``scotbed run`` of 6 peer processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from scotbed import contract
from scotbed.experiment.spec import SpecError, parse_spec
from scotbed.experiment.spec_peers import peer_config
from scotbed.orchestrator.progress import QuietProgress
from scotbed.orchestrator.run import RunOptions, run_spec
from scotbed.routing import PEER_ALGORITHMS
from scotbed.vinifera.analysis import report as peer_analysis
from scotbed.vinifera.config import PeerConfig

VINIFERA = "vinifera"
assert VINIFERA in PEER_ALGORITHMS


def _spec(**over: object) -> dict:
    doc = {"name": "v", "topology": {"kind": "peers", "n": 6}, "routing": VINIFERA}
    doc.update(over)
    return doc


def test_peers_topology_lifts_into_its_block_and_maps_routing_params() -> None:
    spec = parse_spec(
        _spec(routing_params={"k_sw": 1, "beta": 9}, topology={"kind": "peers", "n": 6, "id_space": 64})
    )
    assert spec.topology.peers is not None and spec.topology.peers.n == 6
    cfg = peer_config(spec)
    assert (cfg.id_space, cfg.k_sw, cfg.beta, cfg.k_f) == (64, 1, 9, PeerConfig().k_f)
    assert cfg.domains == (("x", 0.0, 1000.0), ("y", 0.0, 1000.0))
    assert [parse_spec(_spec(backend=b)).backend for b in ("compose", "k8s")] == ["compose", "k8s"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            _spec(routing="snr"),
            "routing: 'snr' does not run on peers; allowed: vinifera, rendezvous-baseline",
        ),
        ({"name": "v", "routing": VINIFERA}, "routing: 'vinifera' runs on peers only"),
        (_spec(routing_params={"kf": 1}), "routing_params.kf: not a peer parameter"),
        (
            _spec(routing_params={"k_f": "2"}),
            "routing_params.k_f: '2' is not allowed; expected int (default 6)",
        ),
        (_spec(topology={"kind": "peers", "n": 6, "domain": [5, 5]}), "topology.domain: [5.0, 5.0] is empty"),
        (_spec(topology={"kind": "peers", "n": 1}), "topology.n: 1 is not allowed"),
        ({"name": "v", "workload": {"peers": {}}}, "workload.peers: only used with topology kind peers"),
    ],
)
def test_peer_specs_are_refused_with_a_clear_message(doc: dict, message: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_spec(doc)
    assert message in str(e.value)


def _ev(node: int, ev: str, **f: object) -> dict:
    return {"ts_ns": 0, "node": contract.peer_node(node), "ev": ev, **f}


def test_records_from_logs_leave_failed_peers_out_of_the_oracle() -> None:
    logs = [
        _ev(0, contract.SUBSCRIBE, ranges=[["x", 0, 10]]),
        _ev(1, contract.SUBSCRIBE, ranges=[["x", 5, 20]]),
        _ev(2, contract.SUBSCRIBE, ranges=[["x", 50, 60]]),
        _ev(2, contract.PUBLISH, pub_id=0, values=[["x", 7.0]], round=3),
        _ev(2, contract.PUBLISH, pub_id=1, values=[["x", 7.0]], round=5),
        _ev(1, contract.EV_IN, pub_id=0, src=2, attr="x", phase="route", hops=1),
        _ev(0, contract.EV_IN, pub_id=0, src=1, attr="x", phase="tree", hops=2),
        _ev(1, contract.DELIVER, pub_id=0, hops=1, tree_hops=0),
        _ev(0, contract.DELIVER, pub_id=0, hops=2, tree_hops=1),
        _ev(1, contract.EV_IN, pub_id=1, src=2, attr="x", phase="route", hops=1),
        _ev(1, contract.DELIVER, pub_id=1, hops=1, tree_hops=0),
        _ev(1, contract.DELIVER, pub_id=1, hops=3, tree_hops=0),
    ]
    recs, names = peer_analysis.records(logs, failed={0: 4})
    assert names == {0, 1, 2}
    assert [r.interested for r in recs] == [frozenset({0, 1}), frozenset({1})]
    assert recs[0].deliveries == {1: 1, 0: 2} and recs[1].extra_deliveries == 1
    s = {"events": 2, "hit_ratio": 1.0, "missed": 0, "extra_deliveries": 1}
    assert peer_analysis.verdict(s, churn=False) == (False, "INCORRECT: 1 duplicate deliveries")
    assert peer_analysis.correctness(s, churn=True) == {"ok": False, "missing": 0, "duplicates": 1}


@pytest.mark.slow
@pytest.mark.spark
def test_scotbed_run_of_six_peer_processes(tmp_path: Path) -> None:
    doc = _spec(
        seed=4,
        routing_params={"k_sw": 1, "k_f": 1},
        workload={"peers": {"width": 0.3, "warmup_rounds": 15, "rounds": 3, "events_per_round": 4}},
    )
    path = tmp_path / "peers.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = run_spec(path, [], RunOptions(out=tmp_path / "runs", quiet=True), QuietProgress())
    assert result.ok, result.verdict
    summary = json.loads((result.run_dir / contract.SUMMARY).read_text())
    p = summary["peers"]
    assert (p["events"], p["hit_ratio"], p["missed"], p["extra_deliveries"]) == (12, 1.0, 0, 0)
    assert summary["correctness"] == {"ok": True, "missing": 0, "duplicates": 0}
    assert sorted(f.name for f in (result.run_dir / contract.EVENTS_DIR).iterdir()) == sorted(
        Path(contract.events_file(contract.peer_node(k))).name for k in range(6)
    )
    assert (result.run_dir / contract.REPORT).read_text().startswith("<!doctype html>")


@pytest.mark.slow
@pytest.mark.spark
def test_a_killed_peer_keeps_its_logged_events(tmp_path: Path) -> None:
    """Churn kills 2 of 6 peers (SIGKILL); what they logged before, the events they published among
    it, still reaches the analysis: every event is counted, none delivered twice."""
    churn = {"every": 2, "leaves": 1}
    workload = {"width": 0.3, "warmup_rounds": 15, "rounds": 5, "events_per_round": 4, "churn": churn}
    doc = _spec(seed=4, routing_params={"k_sw": 1, "k_f": 1}, workload={"peers": workload})
    path = tmp_path / "peers.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = run_spec(path, [], RunOptions(out=tmp_path / "runs", quiet=True), QuietProgress())
    assert result.ok, result.verdict
    faults = (result.run_dir / contract.FAULTS).read_text().splitlines()
    p = json.loads((result.run_dir / contract.SUMMARY).read_text())["peers"]
    assert (len(faults), p["events"], p["extra_deliveries"]) == (2, 20, 0)


def test_validate_checks_a_peers_spec_without_an_overlay(capsys: pytest.CaptureFixture[str]) -> None:
    from scotbed.orchestrator.cli import main

    spec = Path(__file__).resolve().parents[1] / "experiments" / "vinifera.yaml"
    assert (
        main(["validate", str(spec), "--set", "topology.n=12", "--set", "routing=rendezvous-baseline"]) == 0
    )
    out = capsys.readouterr().out
    want = "12 peers, routing rendezvous-baseline, skewed subscriptions, skewed events, backend local"
    assert out == f"ok: vinifera: {want}\n"
