"""The link-matching reproduction row: its cells are saturate searches and its effect compares them."""

from __future__ import annotations

from pathlib import Path

from scotbed.orchestrator.campaign import CampaignIndex
from scotbed.orchestrator.reproduce.effects import judge, relative_changes
from scotbed.orchestrator.reproduce.rows import load_rows
from scotbed.orchestrator.reproduce.runner import _summaries, campaign_of
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
    assert judge(effect, changes).verdict == "agrees"  # +200 % against the paper's +100 %: within 2x
    stale = campaign_of(row, quick=False)  # another scale: other fingerprints, nothing counts
    assert _summaries(stale, index) == {}
