"""`scotbed reproduce`: the rows as data, the effects and their verdicts (pure), and ``--quick`` end to
end with real brokers, Locust and Spark: the table is written, a second call resumes without re-running."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from scotbed_cli import scotbed

from scotbed.orchestrator.reproduce.effects import judge, metric, relative_changes
from scotbed.orchestrator.reproduce.rows import Effect, RowsError, load_rows, select
from scotbed.routing import ALGORITHMS

IMS = Effect("SBP IMs", "subscriptions.ims_total", "snr", "bid", -0.89)


def _summary(ims: float) -> dict[str, object]:
    return {"subscriptions": {"ims_total": ims, "delay_ms": {"mean": 2.0}}}


def test_a_metric_is_read_by_its_dotted_path() -> None:
    s = _summary(40)
    assert metric(s, "subscriptions.ims_total") == 40.0
    assert metric(s, "subscriptions.delay_ms.mean") == 2.0
    assert metric(s, "subscriptions.nothing") is None


def test_changes_are_paired_by_repetition_and_skip_an_unpaired_run() -> None:
    runs = {
        ("bid", 0): _summary(100),
        ("snr", 0): _summary(20),
        ("bid", 1): _summary(50),
        ("snr", 1): _summary(10),
    }
    runs[("snr", 2)] = _summary(1)  # no bid run for repetition 2
    assert relative_changes(IMS, runs) == [-0.8, -0.8]


def test_verdicts() -> None:
    assert judge(IMS, [-0.8, -0.85, -0.82]).verdict == "agrees"
    assert judge(IMS, [-0.3, -0.32]).verdict == "direction only"
    assert judge(IMS, [0.5, 0.52]).verdict == "disagrees"
    assert judge(IMS, [-0.5, 0.5]).verdict == "inconclusive"
    assert judge(IMS, []).verdict == "no data"
    one = judge(IMS, [-0.9]).measured
    assert (one.n, one.mean, one.has_interval) == (1, -0.9, False)  # one run: no interval
    ci = judge(IMS, [-0.8, -0.9]).measured
    assert ci.low < -0.85 < ci.high and math.isclose(ci.mean, -0.85)


def test_every_system_of_design_section_1_has_a_row() -> None:
    rows = load_rows()
    listed = ", ".join(r.system for r in rows)
    for name in ALGORITHMS:
        assert re.search(rf"\b{re.escape(name)}\b", listed), name
    assert {r.name for r in rows if r.runnable} >= {"octopis-scalability", "octopis-burst"}
    for r in rows:
        if r.runnable:
            assert (Path(__file__).resolve().parents[1] / str(r.spec)).is_file()
            assert r.effects and set(r.compare) >= {e.variant for e in r.effects}


def test_an_unknown_row_is_named_in_the_error() -> None:
    with pytest.raises(RowsError, match="nope"):
        select(load_rows(), ["nope"])


@pytest.mark.slow
@pytest.mark.spark
def test_quick_end_to_end_writes_the_table_and_resumes(tmp_path: Path) -> None:
    out, doc = tmp_path / "repro", tmp_path / "doc" / "reproduction.md"
    args = ("reproduce", "octopis-scalability", "--quick", "--out", str(out), "--doc", str(doc), "--quiet")
    first = scotbed(tmp_path, *args, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    index = json.loads((out / "octopis-scalability-quick" / "index.json").read_text())["cells"]
    assert sorted(index) == [f"routing={r},rep=0" for r in ("bid", "dnr", "snr")]
    assert all(c["status"] == "done" for c in index.values())
    text = doc.read_text()
    assert text.count("| SBP IMs, snr vs bid | -89 % |") == 1
    vinifera = "| vinifera vs rendezvous-baseline | Vinifera (Rahimian et al.), §V |"
    assert f"{vinifera} built; not run by this command |" in text
    selforg = (
        "| topology.self_organising (CI, lMST, lMIT) | self-organising broker topologies, §5.1 and §5.3 |"
    )
    assert f"{selforg} built; not run by this command |" in text
    assert (doc.parent / "reproduction" / "octopis-scalability-quick.png").stat().st_size > 0
    for c in index.values():  # every run delivered exactly once
        summary = json.loads((Path(c["run_dir"]) / "analysis" / "summary.json").read_text())
        n = summary["notifications"]
        assert n["delivered"] == n["expected_deliveries"] > 0 and n["missing"] == n["duplicates"] == 0
    again = scotbed(tmp_path, *args, timeout=120)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((out / "octopis-scalability-quick" / "index.json").read_text())["cells"] == index


def test_a_bound_the_paper_states_in_words_is_judged_as_a_bound() -> None:
    cheaper = Effect("cost", "selforg.cost_per_notification", "ci", "static", at_most=0.0)
    assert [
        judge(cheaper, c).verdict for c in ([-0.4], [0.0], [0.03], [-0.4, -0.41, -0.42], [-0.1, 0.2])
    ] == [
        "agrees",
        "agrees",
        "disagrees",
        "agrees",
        "inconclusive",
    ]
    assert judge(cheaper, []).verdict == "no data"


def test_the_self_organising_row_compares_heuristics_by_their_spec_blocks() -> None:
    from scotbed.orchestrator.reproduce.runner import campaign_of

    [row] = select(load_rows(), ["ci-self-organising"])
    campaign = campaign_of(row, quick=False)
    values = campaign.matrix["topology.self_organising"]
    assert values[0] is None and [row.name_of(str(v)) for v in values] == ["static", "lmst", "lmit", "ci"]
    assert {e.at_most for e in row.effects} == {0.0} and all(math.isnan(e.paper) for e in row.effects)
    [octopis] = select(load_rows(), ["octopis-scalability"])
    assert campaign_of(octopis, quick=False).matrix == {"routing": ["bid", "snr", "dnr"]}
    assert octopis.name_of("snr") == "snr"


def test_an_effect_gives_the_paper_figure_or_a_bound() -> None:
    from scotbed.orchestrator.reproduce.rows import _row

    base = {"name": "r", "system": "s", "paper": "p", "status": "built", "compare": ["a", "b"]}
    for effect in ({"paper": -0.5, "at_most": 0.0}, {}):
        bad = {"label": "x", "metric": "m", "variant": "a", "baseline": "b", **effect}
        with pytest.raises(RowsError, match="figure or at_most"):
            _row({**base, "effects": [bad]})
