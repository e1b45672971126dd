"""A campaign whose cells are saturate searches: the file's saturate block, the aggregate, and end to end
on real brokers (a slow and a fast rate through capacity-limited links, resumed without a re-run)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_saturate_local import SPEC as SAT_SPEC  # the tiny capacity-limited path of saturate's own test

from scotbed.analysis.saturation import ratios, sweep_table
from scotbed.orchestrator.campaign import CampaignError, Search, Sweep, load_campaign


def _campaign(tmp_path: Path, saturate: str, matrix: str = "routing: [flooding, rpf]") -> Path:
    (tmp_path / "sat.yaml").write_text(SAT_SPEC)
    f = tmp_path / "c.yaml"
    f.write_text(f"name: satc\nbase: sat.yaml\nmatrix: {{{matrix}}}\nsaturate: {saturate}\n")
    return f


def test_the_saturate_block_is_read_with_the_search_defaults(tmp_path: Path) -> None:
    c = load_campaign(_campaign(tmp_path, "{param: workload.rate_per_minute, lo: 300, hi: 12000}"))
    assert c.saturate == Sweep("workload.rate_per_minute", Search(300.0, 12000.0))
    assert c.saturate.search.tolerance == Search(0, 0).tolerance and len(c.cells(5)) == 2


@pytest.mark.parametrize(
    ("block", "says"),
    [
        ("{param: workload.rate_per_minute, lo: 300}", "keys param, lo, hi required"),
        ("{param: workload.rate_per_minute, lo: 300, hi: 100}", "0 < lo < hi"),
        ("{param: workload.rate_per_minute, lo: 1, hi: 2, step: 3}", "step"),
        ("{param: workload.rate_per_minute, lo: x, hi: 2}", "numbers"),
        ("{param: workload.nope, lo: 1, hi: 2}", "workload.nope"),
        ("[1, 2]", "a mapping"),
    ],
)
def test_a_bad_saturate_block_names_its_fault(tmp_path: Path, block: str, says: str) -> None:
    with pytest.raises(CampaignError, match=r"saturate|cell") as e:
        load_campaign(_campaign(tmp_path, block))
    assert says in str(e.value)


def _cell(routing: str, matching: float, lo: float | None, hi: float | None) -> dict[str, object]:
    return {
        "values": {"routing": routing, "workload.gryphon.matching": matching, "repetition": 0},
        "saturate": {"param": "workload.rate_per_minute", "sustainable": lo, "unsustainable": hi},
    }


def test_ratios_pair_routings_under_the_same_other_values() -> None:
    table = sweep_table(
        [
            _cell("link-matching", 0.005, 2400, 2700),
            _cell("flooding", 0.005, 600, 800),
            _cell("link-matching", 0.02, 1200, None),  # sustainable up to the upper bound
            _cell("flooding", 0.02, None, 300),  # not sustainable even at the lower bound
        ]
    )
    assert list(table["sustainable"].isna()) == [False, False, False, True]
    r = ratios(table).set_index(["workload.gryphon.matching", "variant"])
    assert r.loc[(0.005, "link-matching"), "ratio_at_least"] == 2400 / 800
    assert r.loc[(0.005, "flooding"), "ratio_at_least"] == 600 / 2700
    assert r.loc[(0.02, "link-matching"), "ratio_at_least"] == 1200 / 300
    assert math.isnan(r.loc[(0.02, "flooding"), "ratio_at_least"])
    assert ratios(pd.DataFrame([_cell("rpf", 0.01, 1, 2)["values"]])).empty


@pytest.mark.slow
def test_a_saturate_campaign_records_each_cells_interval_and_resumes(tmp_path: Path) -> None:
    f = _campaign(tmp_path, "{param: workload.rate_per_minute, lo: 300, hi: 12000, max_probes: 2}")
    env = {**os.environ, "SCOTBED_STATE_DIR": str(tmp_path / "state")}
    cmd = [sys.executable, "-m", "scotbed.orchestrator.cli", "campaign", str(f), "--out", str(tmp_path)]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
    assert first.returncode == 0, first.stderr[-3000:]
    cdir = tmp_path / "satc"
    cells = json.loads((cdir / "index.json").read_text())["cells"]
    assert {
        k: (c["status"], c["saturate"]["sustainable"], c["saturate"]["unsustainable"])
        for k, c in cells.items()
    } == {
        "routing=flooding,rep=0": ("done", 300.0, 12000.0),  # 5/s over links of 20/s; 200/s is not
        "routing=rpf,rep=0": ("done", 300.0, 12000.0),
    }
    probes = json.loads((cdir / "probes.json").read_text())["probes"]
    assert len(probes) == 4 == len(list((cdir / "runs").iterdir()))
    csv = pd.read_csv(cdir / "analysis" / "saturation.csv")
    assert sorted(csv["routing"]) == ["flooding", "rpf"] and set(csv["sustainable"]) == {300.0}
    html = (cdir / "report.html").read_text()
    assert "saturation campaign" in html and "ratio_at_least" in html and "data:image/png;base64," in html
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=True)
    assert (
        again.stderr.count("skipped (finished earlier)") + again.stdout.count("skipped (finished earlier)")
        == 2
    )
    assert len(list((cdir / "runs").iterdir())) == 4  # nothing re-run
