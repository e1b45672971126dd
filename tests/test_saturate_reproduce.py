"""The link-matching reproduction row: its cells are saturate searches and its effect compares them."""

from __future__ import annotations

import math
from pathlib import Path

import yaml
from reproduce_records import row_record, run_figures

from scotbed.orchestrator.campaign import CampaignIndex
from scotbed.orchestrator.reproduce.cells import campaign_of
from scotbed.orchestrator.reproduce.doc import chosen_records, write_doc
from scotbed.orchestrator.reproduce.effects import judge, relative_changes
from scotbed.orchestrator.reproduce.rows import load_rows
from scotbed.orchestrator.reproduce.runner import _summaries
from scotbed.orchestrator.saturation import sweep_fingerprint


def test_the_link_matching_row_is_a_saturate_campaign_judged_on_the_sustainable_rates(tmp_path: Path) -> None:
    row = next(r for r in load_rows() if r.name == "link-matching")
    campaign = campaign_of(row, quick=True)
    assert campaign.saturate is not None and campaign.saturate.param == "workload.rate_per_minute"
    assert campaign.matrix == {"routing": ["link-matching", "flooding"]}
    index = CampaignIndex(tmp_path / "index.json")
    cells = campaign.cells(11)
    found = {"link-matching": (2400.0, 2700.0), "flooding": (800.0, 1000.0)}
    for cell in cells:
        routing = dict(cell.values)["routing"]
        lo, hi = found[routing]
        fp = sweep_fingerprint(campaign.base, cell.sets, campaign.saturate)
        interval = {"param": "workload.rate_per_minute", "sustainable": lo, "unsustainable": hi}
        rec = {"status": "done", "run_dir": None, "seconds": 60.0, "fingerprint": fp}
        index.put(cell.key, {**rec, "values": {"routing": routing, "repetition": 0}, "saturate": interval})
    index.put(
        "routing=rpf,rep=0", {"status": "done", "values": {"routing": "rpf"}, "saturate": {}}
    )  # not a cell
    got = _summaries(campaign, index)
    assert {k: (s, t) for k, (s, t, _, _) in got.items()} == {
        ("link-matching", 0): ({"saturate": index.cells[cells[0].key]["saturate"]}, 60.0),
        ("flooding", 0): ({"saturate": index.cells[cells[1].key]["saturate"]}, 60.0),
    }
    (effect,) = row.effects
    changes = relative_changes(effect, {k: s for k, (s, _, _, _) in got.items()})
    assert changes == [2400 / 800 - 1]
    assert judge(effect, changes).verdict == "agrees"  # +200 %: at least flooding's rate, as the slides say
    stale = campaign_of(row, quick=False)  # another scale: other fingerprints, nothing counts
    assert _summaries(stale, index) == {}


def test_the_two_network_loading_rows_differ_only_in_the_matching_fraction_and_claim_a_bound() -> None:
    rows = {r.name: r for r in load_rows()}
    low, high = rows["link-matching"], rows["link-matching-2pct"]
    assert dict(s.split("=", 1) for s in high.scale) == {
        **dict(s.split("=", 1) for s in low.scale),
        "workload.gryphon.matching": "0.02",
    }
    assert low.spec == high.spec and low.saturate == high.saturate and low.compare == high.compare
    spec = yaml.safe_load((Path(__file__).resolve().parents[1] / str(low.spec)).read_text())
    assert spec["workload"]["gryphon"]["matching"] == 0.005  # the chart's left end, 0.5 %
    assert spec["workload"]["gryphon"]["attributes"] == 15  # the slides' network-loading schema
    for row in (low, high):
        (effect,) = row.effects
        assert effect.at_least == 0.0 and effect.at_most is None and math.isnan(effect.paper)
        assert judge(effect, [-0.2, -0.25, -0.22]).verdict == "disagrees"  # flooding sustaining more
    assert campaign_of(low, quick=False).name != campaign_of(high, quick=False).name  # resumed apart


def test_the_table_prints_the_network_loading_bound_and_judges_the_searched_rates(tmp_path: Path) -> None:
    row = next(r for r in load_rows() if r.name == "link-matching-2pct")
    rates = {("link-matching", 0): 1200.0, ("flooding", 0): 800.0, ("link-matching", 1): 1600.0}
    rates |= {("flooding", 1): 800.0, ("link-matching", 2): 800.0, ("flooding", 2): 800.0}
    runs = [
        run_figures(f"routing={name},rep={rep}", name, rep, {"saturate.sustainable": rate}, seconds=30.0)
        for (name, rep), rate in rates.items()
    ]
    record = row_record(row.name, runs, 3, scale=tuple(row.scale))
    doc = tmp_path / "reproduction.md"
    write_doc(doc, [row], chosen_records([row], {row.name: record}))
    want = "| max sustainable rate, link-matching vs flooding | at least +0 % (a bound in the text) | +50 % ["
    assert want in doc.read_text()  # +50 %, +100 % and a tie: the interval spans the bound
    assert "| inconclusive |" in doc.read_text()
    assert "6 finished, 180 s of runs; no oracle verdict (saturate searches" in doc.read_text()
    assert (tmp_path / "reproduction" / f"{row.name}.png").stat().st_size > 0
