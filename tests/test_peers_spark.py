"""The peers' figures as a Spark section (:mod:`scotbed.vinifera.analysis.section`).

A fixed peers run directory (``tests/fixtures/peers_run``: 8 Vinifera peer processes, two killed, a
per-round capacity of 2 event messages, 24 events) gives exactly the figures the plain-Python
analysis gave on it before Spark took over (``peers_run_expected.json``, every key); a hand-written
log gives its known answers; a broker run has no ``peers`` key.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from scotbed import contract
from scotbed.analysis.context import RunData
from scotbed.analysis.rundir import RunDir
from scotbed.analysis.sections import SECTIONS
from scotbed.experiment import dump_spec, parse_spec
from scotbed.vinifera.analysis.report import report_html
from scotbed.vinifera.analysis.section import analyse, peers_section

pytestmark = pytest.mark.spark

FIXTURES = Path(__file__).parent / "fixtures"
SPECS = {  # the resolved spec of a hand-written run, by its topology kind
    contract.PEERS_KIND: {
        "name": "t",
        "topology": {"kind": contract.PEERS_KIND, "n": 4},
        "routing": "vinifera",
    },
    "scot": {"name": "t"},
}


def test_the_section_is_in_the_registry() -> None:
    assert ("peers", peers_section) in SECTIONS


def test_fixed_run_gives_the_python_analysis_figures_exactly(spark: Any, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "peers_run", run)
    (run / contract.ANALYSIS_DIR).mkdir()
    block, plots = analyse(run)
    got = json.loads(json.dumps(block))
    want = json.loads((FIXTURES / "peers_run_expected.json").read_text())
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key
    assert (got["events"], got["dropped"], got["missed"], got["extra_deliveries"]) == (24, 14, 24, 0)
    load = pd.read_parquet(run / contract.ANALYSIS_DIR / "peer_load.parquet")
    assert list(load["peer"]) == list(range(8)) and load["load"].max() == want["max_load"]
    by_round = pd.read_parquet(run / contract.ANALYSIS_DIR / "peer_hit_ratio.parquet")
    assert list(by_round["round"]) == list(range(13, 19))
    assert sorted(p.name for p in plots.values()) == ["peer_hit_ratio.png", "peer_load_cdf.png"]
    page = report_html("fixture", "vinifera", block, plots)
    assert page.count('src="data:image/png;base64,') == 2 and "<td>24</td>" in page


def _ev(node: int, ev: str, **f: object) -> dict:
    return {"ts_ns": f.pop("ts", 0), "node": contract.peer_node(node), "ev": ev, **f}


def _run_dir(tmp: Path, kind: str, logs: list[dict], faults: list[dict]) -> Path:
    (tmp / contract.EVENTS_DIR).mkdir(parents=True)
    (tmp / contract.ANALYSIS_DIR).mkdir()
    (tmp / contract.SPEC_RESOLVED).write_text(dump_spec(parse_spec(SPECS[kind])))
    (tmp / contract.FAULTS).write_text("".join(json.dumps(f) + "\n" for f in faults))
    for node in sorted({e["node"] for e in logs}):
        path = tmp / contract.events_file(node)
        path.write_text("".join(json.dumps(e) + "\n" for e in logs if e["node"] == node))
    return tmp


def test_hand_written_logs_give_their_known_figures(spark: Any, tmp_path: Path) -> None:
    """Peer 0 fails at round 4: interested in event 0 (round 3) only. Event 1 is delivered twice at
    peer 1 (the first counts); peer 2 receives event 0 without interest; one copy was dropped."""
    logs = [
        _ev(0, contract.SUBSCRIBE, ranges=[["x", 0, 10]]),
        _ev(1, contract.SUBSCRIBE, ranges=[["x", 5, 20]]),
        _ev(2, contract.SUBSCRIBE, ranges=[["x", 50, 60]]),
        _ev(3, contract.SUBSCRIBE, ranges=[["x", 6, 8], ["y", 0, 1]]),
        _ev(2, contract.PUBLISH, pub_id=0, values=[["x", 7.0]], round=3),
        _ev(2, contract.PUBLISH, pub_id=1, values=[["x", 7.0]], round=5),
        _ev(2, contract.EV_IN, pub_id=0, src=1, attr="x", phase="route", hops=1, round=3),
        _ev(1, contract.EV_IN, pub_id=0, src=2, attr="x", phase="route", hops=1, round=3),
        _ev(0, contract.EV_IN, pub_id=0, src=1, attr="x", phase="tree", hops=2, round=3),
        _ev(3, contract.EV_DROP, pub_id=0, src=1, attr="x", phase="tree", hops=2, round=3),
        _ev(1, contract.DELIVER, pub_id=0, hops=1, tree_hops=0),
        _ev(0, contract.DELIVER, pub_id=0, hops=2, tree_hops=1),
        _ev(1, contract.EV_IN, pub_id=1, src=2, attr="x", phase="route", hops=1, round=5),
        _ev(1, contract.DELIVER, pub_id=1, hops=1, tree_hops=0, ts=1),
        _ev(1, contract.DELIVER, pub_id=1, hops=3, tree_hops=0, ts=2),
    ]
    run = _run_dir(tmp_path, contract.PEERS_KIND, logs, [{"round": 4, "kind": "kill", "peer": "peer-0"}])
    s, _ = analyse(run)
    assert s == {
        "events": 2,
        "hit_ratio": 1.0,
        "hit_ratio_by_round": {3: 1.0, 5: 1.0},
        "missed": 0,
        "extra_deliveries": 1,
        "dropped": 1,
        "overhead": 1 / 4,
        "path_length": 4 / 3,
        "tree_depth": 1 / 3,
        "idle_share": 3 / 4,
        "max_load": 1 / 2,
        "load_cdf": {0.0: 3 / 4, 0.1: 3 / 4, 0.2: 3 / 4, 0.3: 3 / 4, 0.6: 1.0, 1.0: 1.0},
    }


def test_a_broker_run_has_no_peers_key(spark: Any, tmp_path: Path) -> None:
    logs = [{"ts_ns": 1, "node": "b0", "ev": contract.PUBLISH, "pub_id": "p"}]
    run = _run_dir(tmp_path, "scot", [], [])
    (run / contract.events_file("b0")).write_text(json.dumps(logs[0]) + "\n")
    assert peers_section(RunData(spark, RunDir.open(run))).to_json() is None
