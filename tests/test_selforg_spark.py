"""The Spark ``selforg`` section and its plot on a hand-written run with known costs and traffic.

Path v0–v1–v2 (brokers b-v0-0 … b-v2-0), c_01 = 2, c_12 = 3, other pairs 10, p_1 = 4, others 1.
b0 publishes, b2 consumes; b1 relays. Each window of 1 s holds two notifications:

- window 0, table 0: 1 + 2 + 4 + 3 + 1 = 11 each, 22.
- window 1: redraw 1 (c_12 = 7, c_02 = 1) reaches b0 at 1.1 s, b1 at 1.2 s, b2 at 1.3 s. The
  notification at 1.15 s crosses b1 before b1 switched (its c_12 is still 3): 11; the one at 1.5 s
  pays 1 + 2 + 4 + 7 + 1 = 15. 26 in all.
- window 2: the swap +v0–v2 −v1–v2 (one ``link_up`` at each end); b0 sends straight to b2:
  1 + 1 + 1 = 3 each, 6.

The manager's three messages: a bcast b0→b1 at 0.5 s (2 + 4), a newver b2→b1 at 0.9 s (3 + 4), a
req b1→b2 at 1.25 s, after b1 switched (7 + 1): 21 in Eq. 1 units, 190 bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scotbed import contract
from scotbed.analysis.context import RunData
from scotbed.analysis.rundir import RunDir
from scotbed.selforg.analysis.cost import cost_over_time as python_cost_over_time
from scotbed.selforg.analysis.cost import switches
from scotbed.selforg.analysis.plots import cost_figure, cost_over_time
from scotbed.selforg.analysis.section import selforg_section
from scotbed.selforg.redraws import InForce, parse, tables

pytestmark = [pytest.mark.spark, pytest.mark.slow]

T0 = 1_700_000_000_000_000_000
MS = 1_000_000
B0, B1, B2 = (f"b-v{i}-0" for i in range(3))
COSTS = {
    "default_link": 10.0,
    "default_broker": 1.0,
    "links": [["v0", "v1", 2.0], ["v1", "v2", 3.0]],
    "brokers": {"v1": 4.0},
    "redraws": [{"at_s": 1.0, "what": "set", "links": [["v1", "v2", 7.0], ["v0", "v2", 1.0]]}],
}


def E(ms: float, node: str, ev: str, **kw: Any) -> dict[str, Any]:
    return {"ts_ns": T0 + int(ms * MS), "node": node, "ev": ev, **kw}


def _relayed(ms: float, pub: str) -> list[dict[str, Any]]:
    return [
        E(ms, B0, "notif_in", pub_id=pub, link=""),
        E(ms + 1, B0, "notif_out", pub_id=pub, link=B1),
        E(ms + 2, B1, "notif_in", pub_id=pub, link=B0),
        E(ms + 3, B1, "notif_out", pub_id=pub, link=B2),
        E(ms + 4, B2, "notif_in", pub_id=pub, link=B1),
    ]


def _direct(ms: float, pub: str) -> list[dict[str, Any]]:
    return [
        E(ms, B0, "notif_in", pub_id=pub, link=""),
        E(ms + 1, B0, "notif_out", pub_id=pub, link=B2),
        E(ms + 2, B2, "notif_in", pub_id=pub, link=B0),
    ]


EVENTS = [
    *_relayed(100, "n0"),
    *_relayed(600, "n1"),
    E(500, B0, "topo_out", kind="bcast", link=B1, size=100),
    E(900, B2, "topo_out", kind="newver", link=B1, size=40),
    E(1100, B0, "cost_redraw", n=1),
    *_relayed(1150, "n2"),
    E(1200, B1, "cost_redraw", n=1),
    E(1250, B1, "topo_out", kind="req", link=B2, size=50),
    E(1300, B2, "cost_redraw", n=1),
    *_relayed(1500, "n3"),
    E(2050, B0, "link_up", link=B2),
    E(2060, B2, "link_up", link=B0),
    E(2100, B1, "link_down", link=B2, lost=0),
    E(2110, B2, "link_down", link=B1, lost=0),
    *_direct(2200, "n4"),
    *_direct(2500, "n5"),
]


def _run_dir(root: Path) -> RunDir:
    (root / contract.EVENTS_DIR).mkdir(parents=True)
    for b in (B0, B1, B2):
        lines = "".join(json.dumps(e) + "\n" for e in EVENTS if e["node"] == b)
        (root / contract.events_file(b)).write_text(lines)
    spec = {
        "name": "x",
        "routing": "rpf",
        "topology": {"costs": COSTS, "self_organising": {"heuristic": "ci"}},
    }
    (root / contract.SPEC_RESOLVED).write_text(yaml.safe_dump(spec))
    brokers = [{"id": f"b-v{i}-0", "vertex": f"v{i}"} for i in range(3)]
    (root / contract.TOPOLOGY).write_text(json.dumps({"brokers": brokers}))
    return RunDir.open(root)


def test_the_section_and_its_plot_price_every_window_with_the_table_in_force(
    spark: Any, tmp_path: Path
) -> None:
    d = RunData(spark, _run_dir(tmp_path / "run"))
    try:
        block = selforg_section(d).to_json()
    finally:
        d.close()
    assert block is not None
    span_s = (2502 - 100) / 1000
    assert block == {
        "heuristic": "ci",
        "window_s": 1.0,
        "cost_total": 54.0,
        "published": 6,
        "cost_per_notification": 9.0,
        "cost_with_overhead_per_notification": (54.0 + 21.0) / 6,
        "reconfigurations": 1,
        "reconfigurations_per_s": pytest.approx(1 / span_s, rel=1e-12),
        "cost_redraws": 1,
        "overhead": {
            "messages": 3,
            "bytes": 190,
            "cost": 21.0,
            "by_kind": {"bcast": 1, "newver": 1, "req": 1},
        },
    }
    table = d.tables["selforg_cost"]
    assert table.values.tolist() == [[0.0, 22.0, 2, 11.0], [1.0, 26.0, 2, 13.0], [2.0, 6.0, 2, 3.0]]
    # the pure reader agrees with Spark on the same events
    base, timeline = parse(COSTS)
    in_force = InForce(tables(base, timeline, ["v0", "v1", "v2"]), switches(EVENTS))
    vertex_of = {f"b-v{i}-0": f"v{i}" for i in range(3)}
    windows = python_cost_over_time(EVENTS, in_force, vertex_of, 10**9)
    assert [(w.cost, w.published) for w in windows] == [(22.0, 2), (26.0, 2), (6.0, 2)]
    fig = cost_figure(table, "ci")
    line = fig.axes[0].lines[0]
    assert line.get_xydata().tolist() == [[0.0, 11.0], [1.0, 13.0], [2.0, 3.0]]
    assert line.get_label() == "ci"
    png = cost_over_time(table, tmp_path / "selforg_cost.png", "ci")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
