"""`scotbed reproduce`: the rows as data, the effects and their verdicts (pure), and ``--quick`` end to
end with real brokers, Locust and Spark: the table is written, a second call resumes without re-running."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from reproduce_records import row_record, run_figures
from scotbed_cli import scotbed

from scotbed.experiment.spec import Spec, load_spec
from scotbed.orchestrator.reproduce.doc import chosen_records, write_doc
from scotbed.orchestrator.reproduce.effects import judge, metric, relative_changes
from scotbed.orchestrator.reproduce.record import (
    RowRecord,
    RunFigures,
    load_records,
    write_record,
)
from scotbed.orchestrator.reproduce.rows import Effect, Row, RowsError, load_rows, select
from scotbed.routing import ALGORITHMS

IMS = Effect("SBP IMs", "subscriptions.ims_total", "snr", "bid", -0.89)


def _summary(ims: float) -> dict[str, object]:
    return {"subscriptions": {"ims_total": ims, "delay_ms": {"mean": ims / 10}}}


def test_a_metric_is_read_by_its_dotted_path() -> None:
    s = _summary(40)
    assert metric(s, "subscriptions.ims_total") == 40.0
    assert metric(s, "subscriptions.delay_ms.mean") == 4.0
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
        if r.spec is not None:
            assert (Path(__file__).resolve().parents[1] / r.spec).is_file()
        if r.runnable:
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
    vinifera = (
        "| vinifera vs rendezvous-baseline, scotbed's variant (K_sw 4 + K_f 4) |"
        " Vinifera (Rahimian et al.), §V |"
    )
    assert f"{vinifera} built; not measured yet (`scotbed reproduce vinifera`) |" in text
    status = "| snr, dnr vs bid | OctopiS (SCOT dynamic routing), §7 | [measured](#octopis-scalability-"
    assert re.search(re.escape(status) + r"[a-z0-9-]+\) at the quick scale only: \d+ [a-z]", text)
    assert (doc.parent / "reproduction" / "octopis-scalability-quick.png").stat().st_size > 0
    record = load_records(doc.parent / "reproduction")["octopis-scalability-quick"]
    assert [(r.compare, r.repetition) for r in record.runs] == [("bid", 0), ("dnr", 0), ("snr", 0)]
    assert all(r.correct and r.figures for r in record.runs)
    cells = {c["values"]["routing"]: c["fingerprint"] for c in index.values()}
    assert {r.compare: r.spec_fingerprint for r in record.runs} == cells  # the campaign's, not a copy
    assert len(set(cells.values())) == 3  # the routing differs, nothing else
    assert record.cores >= 1 and len(record.load_1min) == 2 * len(record.runs)
    for c in index.values():  # every run delivered exactly once
        summary = json.loads((Path(c["run_dir"]) / "analysis" / "summary.json").read_text())
        n = summary["notifications"]
        assert n["delivered"] == n["expected_deliveries"] > 0 and n["missing"] == n["duplicates"] == 0
    table_only = scotbed(tmp_path, "reproduce", "--table-only", "--doc", str(doc), timeout=120)
    assert table_only.returncode == 0, table_only.stderr[-3000:]
    assert doc.read_text() == text  # the table from the records alone, no runs directory read
    again = scotbed(tmp_path, *args, timeout=120)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((out / "octopis-scalability-quick" / "index.json").read_text())["cells"] == index


@pytest.mark.parametrize(
    ("bound", "verdicts"),
    [
        ({"at_most": 0.0}, ["agrees", "agrees", "disagrees", "agrees", "disagrees", "inconclusive"]),
        ({"at_least": 0.0}, ["disagrees", "agrees", "agrees", "disagrees", "agrees", "inconclusive"]),
    ],
)
def test_a_bound_the_paper_states_in_words_is_judged_as_a_bound(
    bound: dict[str, float], verdicts: list[str]
) -> None:
    effect = Effect("cost", "selforg.cost_per_notification", "ci", "static", **bound)
    changes = ([-0.4], [0.0], [0.03], [-0.4, -0.41, -0.42], [0.4, 0.41, 0.42], [-0.2, 0.1])
    assert [judge(effect, c).verdict for c in changes] == verdicts
    assert judge(effect, []).verdict == "no data"


def test_the_status_table_tallies_each_rows_verdicts_and_links_its_section(tmp_path: Path) -> None:
    from dataclasses import replace

    [octopis] = select(load_rows(), ["octopis-scalability"])
    effects = (
        IMS,  # snr's IMs -82 % of bid's, the paper's -89 %
        Effect("IMs", "subscriptions.ims_total", "snr", "bid", at_least=0.0),
        Effect("delay", "subscriptions.delay_ms.mean", "snr", "bid", -0.77),  # every run host-bound
        Effect("notification IMs", "notifications.ims_total", "snr", "bid", -0.12),  # no such figure
    )
    row = replace(octopis, effects=effects)
    doc = tmp_path / "reproduction.md"
    write_doc(doc, [row], chosen_records([row], {row.name: _record([20, 15, 18], bound=(0, 1, 2))}))
    text = doc.read_text()
    tallied = "1 agrees, 1 disagrees, 1 host-bound, 1 no data"
    assert f"| [measured](#octopis-scalability-octopis-scot-dynamic-routing-7-fig-9-a-d): {tallied} |" in text
    assert f"Over the 1 measured rows, 4 effects: {tallied}." in text
    assert "### octopis-scalability: OctopiS (SCOT dynamic routing), §7, Fig. 9 (a)-(d)\n" in text


def test_the_paper_column_prints_a_stated_bound_with_its_direction() -> None:
    from scotbed.orchestrator.reproduce.doc import _paper

    assert _paper(Effect("x", "m", "a", "b", at_least=0.0)) == "at least +0 % (a bound in the text)"
    assert _paper(Effect("x", "m", "a", "b", at_most=-0.5)) == "at most -50 % (a bound in the text)"
    assert _paper(IMS) == "-89 %"


def test_the_self_organising_row_compares_heuristics_by_their_spec_blocks() -> None:
    from scotbed.orchestrator.reproduce.cells import campaign_of

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
    effect = {"label": "x", "metric": "m", "variant": "a", "baseline": "b"}
    for given in (
        {"paper": -0.5, "at_most": 0.0},
        {"at_most": 0.0, "at_least": 0.0},
        {"paper": 1.0, "at_least": 0.0},
        {},
    ):
        with pytest.raises(RowsError, match="figure, at_most or at_least, one of them"):
            _row({**base, "effects": [{**effect, **given}]})
    for given in ({"paper": -0.5}, {"at_most": 0.0}, {"at_least": 0.0}):
        assert _row({**base, "effects": [{**effect, **given}]}).effects[0].label == "x"


REPO = Path(__file__).resolve().parents[1]


def test_the_committed_table_is_what_table_only_writes_from_the_committed_records(tmp_path: Path) -> None:
    committed = REPO / "docs" / "reproduction.md"
    rows = load_rows()
    written = tmp_path / "reproduction.md"
    write_doc(written, rows, chosen_records(rows, load_records(committed.parent / "reproduction")))
    assert written.read_text() == committed.read_text(), "run: scotbed reproduce --table-only"


def _run(compare: str, rep: int, ims: float, validity: str = "valid") -> RunFigures:
    figures = {"subscriptions.ims_total": ims, "subscriptions.delay_ms.mean": ims / 10}
    return run_figures(
        f"routing={compare},rep={rep}", compare, rep, figures, validity=validity, correct=True, seconds=10.0
    )


def _record(snr: list[float], quick: bool = False, bound: tuple[int, ...] = ()) -> RowRecord:
    """bid sends 100 IMs in every repetition, snr ``snr[k]`` in repetition k; ``bound``: host-bound reps."""
    runs = [
        _run(name, k, ims, "host-bound" if k in bound else "valid")
        for k, x in enumerate(snr)
        for name, ims in (("bid", 100.0), ("snr", x))
    ]
    return row_record("octopis-scalability", runs, len(snr), quick=quick, scale=("workload.subscribers=50",))


def test_a_record_round_trips_and_its_effects_are_judged_from_its_runs(tmp_path: Path) -> None:
    write_record(tmp_path / "reproduction", _record([20, 15, 18], bound=(1,)))
    write_record(tmp_path / "reproduction", _record([150], quick=True))
    records = load_records(tmp_path / "reproduction")
    assert records == {
        "octopis-scalability": _record([20, 15, 18], bound=(1,)),
        "octopis-scalability-quick": _record([150], quick=True),
    }
    rows = load_rows()
    measured = chosen_records(rows, records)  # the full scale wins over the quick one
    assert list(measured) == ["octopis-scalability"]
    ims = next(j for j in measured["octopis-scalability"].judged if j.effect.metric == IMS.metric)
    assert ims.verdict == "agrees" and ims.measured.n == 3
    doc = tmp_path / "reproduction.md"
    write_doc(doc, rows, measured)
    text = doc.read_text()
    assert "| SBP IMs, snr vs bid | -89 % | -82 % [" in text
    assert "- Runs: 6 finished, 60 s of runs; every run correct; validity: 2 host-bound (left out of" in text
    assert "commit `0123abc`, a host with 2 cores, load average (1 min) 0.5–1.5 over 2 samples" in text
    assert "| dnr vs snr vs bid | OctopiS (SCOT dynamic routing), §7 | built; not measured yet" in text
    assert "not tuned" not in text


def test_a_malformed_record_names_its_file_and_field(tmp_path: Path) -> None:
    path = write_record(tmp_path, _record([20]))
    path.write_text(path.read_text().replace('"cores": 2', '"cores": "two"'))
    with pytest.raises(RowsError, match=r"octopis-scalability\.json: not a reproduction record: cores"):
        load_records(tmp_path)


def test_host_bound_runs_are_left_out_of_the_delay_effects_and_one_only_they_had_reads_host_bound(
    tmp_path: Path,
) -> None:
    row = next(r for r in load_rows() if r.name == "octopis-scalability")
    delay = next(e for e in row.effects if e.metric == "subscriptions.delay_ms.mean" and e.variant == "snr")
    assert delay.timed and not IMS.timed
    record = _record([20, 50, 10], bound=(1,))
    assert relative_changes(delay, record.summaries(delay)) == [-0.8, -0.9]  # the host-bound pair left out
    assert relative_changes(IMS, record.summaries(IMS)) == [-0.8, -0.5, -0.9]  # a count keeps it
    every = _record([20, 50, 10], bound=(0, 1, 2))
    judged = {j.effect: j for j in chosen_records([row], {row.name: every})[row.name].judged}
    assert judged[delay].verdict == "host-bound"  # not "no data"
    assert judged[IMS].verdict == "agrees"
    doc = tmp_path / "reproduction.md"
    write_doc(doc, [row], chosen_records([row], {row.name: every}))
    want = "| subscription delay, snr vs bid | -77 % | every run host-bound (left out) | host-bound |"
    assert want in doc.read_text()


def test_a_change_short_of_all_or_nothing_is_not_printed_as_100_per_cent() -> None:
    from scotbed.orchestrator.reproduce.doc import _pct

    assert [_pct(x) for x in (-0.9999, -1.0, -0.996, -0.994, -0.8, 0.5, 1.0, math.nan)] == [
        "-99.99 %",
        "-100 %",
        "-99.60 %",
        "-99 %",
        "-80 %",
        "+50 %",
        "+100 %",
        "n/a",
    ]


def test_a_change_short_of_none_is_not_printed_as_0_per_cent() -> None:
    from scotbed.orchestrator.reproduce.doc import _pct

    assert [_pct(x) for x in (0.0032, -0.0004, 0.0, 0.012)] == ["+0.32 %", "-0.04 %", "+0 %", "+1 %"]


def _resolved(row_name: str, quick: bool = False) -> list[tuple[str, Spec]]:
    """The row's compared names with the spec every campaign cell of it runs (first repetition)."""
    from scotbed.orchestrator.reproduce.cells import campaign_of

    [row] = select(load_rows(), [row_name])
    campaign = campaign_of(row, quick)
    vary = next(iter(campaign.matrix))
    return [
        (row.name_of(str(dict(cell.values)[vary])), load_spec(campaign.base, cell.sets))
        for cell in campaign.cells()
        if cell.repetition == 0
    ]


@pytest.mark.parametrize("alpha", [0.2, 0.5, 0.8])
def test_the_self_organising_rows_run_every_heuristic_at_their_alpha(alpha: float) -> None:
    name = "ci-self-organising" if alpha == 0.5 else f"ci-self-organising-alpha-{alpha}"
    for quick in (False, True):
        cells = _resolved(name, quick)
        assert [n for n, _ in cells] == ["static", "lmst", "lmit", "ci"]
        for n, spec in cells:
            assert spec.topology.costs is not None and spec.topology.costs.alpha == alpha
            so = spec.topology.self_organising
            assert (so.heuristic if so is not None else "static") == n
    [row] = select(load_rows(), [name])
    counted = {(e.baseline, e.metric) for e in row.effects}
    both = {"selforg.cost_per_notification", "selforg.cost_with_overhead_per_notification"}
    assert counted >= {(b, m) for b in ("lmst", "lmit") for m in both}  # §5.3: "for all α", both counts
    assert ("static" in {b for b, _ in counted}) == (alpha == 0.5)  # §5.1 states it at the default only


def test_the_vinifera_rows_run_the_papers_links_and_scotbeds_variant() -> None:
    from scotbed.experiment.spec_peers import peer_config

    for quick in (False, True):
        for name, spec in _resolved("vinifera-paper-k", quick):
            assert spec.topology.peers is not None
            n, cfg = spec.topology.peers.n, peer_config(spec)
            assert (cfg.k_sw, cfg.k_f) == (0, round(math.log2(n)) - 2), (name, quick)  # §V-A
        for name, spec in _resolved("vinifera", quick):
            assert (peer_config(spec).k_sw, peer_config(spec).k_f) == (4, 4), (name, quick)
    names = [r.name for r in load_rows()]
    assert names.index("vinifera-paper-k") < names.index("vinifera")  # the paper's configuration first
    paper, variant = select(load_rows(), ["vinifera-paper-k", "vinifera"])
    assert paper.effects == variant.effects and "scotbed's variant" in variant.figure


def test_the_vinifera_figure_rows_run_the_papers_peers_and_links_and_vary_only_what_they_compare() -> None:
    """§V: 1,000 peers in the simulator, 50 processes (the host's share); §V-A: Fig. 3's points keep
    K_sw + K_f = 8, every later figure K_sw 0 and K_f log2(N) − 2; each row changes only its own
    figure's parameter (friends, attributes, the rate against the capacity X, churn), and a row on
    processes checks the paper's figures its -sim row checks."""
    from scotbed.experiment.spec_peers import MAX_PEER_PROCESSES, PeersWorkloadSpec, peer_config

    friends = {"friends-0": (8, 0), "friends-8": (0, 8), "vinifera": (8, 0), "rendezvous-baseline": (8, 0)}
    figures = ("vinifera-friends", "vinifera-attributes", "vinifera-capacity", "vinifera-churn")
    rows = {r.name: r for r in load_rows() if r.name.startswith(figures)}
    sim = [n for n in rows if n.endswith("-sim")]
    assert len(sim) == 7 and sorted(rows) == sorted([*sim, *(n.removesuffix("-sim") for n in sim)])
    for name, row in rows.items():
        simulated = name.endswith("-sim")
        if not simulated:
            assert row.effects == rows[f"{name}-sim"].effects, name
        for quick in (False, True):
            for compared, spec in _resolved(name, quick):
                assert (spec.backend == "sim") == simulated and spec.topology.peers is not None, name
                n, cfg = spec.topology.peers.n, peer_config(spec)
                w = spec.workload.peers or PeersWorkloadSpec()
                full, small = (1000, 100) if simulated else (50, 12)
                assert n == (small if quick else full) and (simulated or n <= MAX_PEER_PROCESSES), name
                if name.startswith("vinifera-friends"):
                    assert (cfg.k_sw, cfg.k_f) == friends[compared], (name, compared)
                else:
                    assert (cfg.k_sw, cfg.k_f) == (0, round(math.log2(n)) - 2), (name, quick)
                attributes = int(name.split("-")[2]) if "attributes" in name else 1
                assert len(spec.topology.peers.attributes) == attributes, name
                assert (w.churn is not None) == name.startswith("vinifera-churn"), name
                if "capacity" in name:  # §V-D: rates up to five times X
                    assert w.capacity is not None
                    assert w.events_per_round == (w.capacity if compared == "rate-X" else 5 * w.capacity)
                else:
                    assert w.capacity is None, name


def test_rows_share_notes_through_a_list_of_texts() -> None:
    from scotbed.orchestrator.reproduce.rows import _row

    base = {"name": "r", "system": "s", "paper": "p", "status": "built"}
    assert _row({**base, "notes": ["Shared.", "Own."]}).notes == "Shared. Own."
    assert _row({**base, "notes": "Own."}).notes == "Own."
    with pytest.raises(RowsError, match="row r: notes"):
        _row({**base, "notes": ["Shared.", {"not": "a text"}]})


def test_the_octopis_paper_scale_rows_run_in_virtual_time_and_every_new_delay_row_models_the_broker() -> None:
    """The runner's campaign carries a row's ``backend=sim`` and ``brokers.service_us`` into the spec
    every cell resolves, so the sim rows' delays come from the time model, not the host."""
    from scotbed.orchestrator.backends import backend_class

    for name, virtual in (
        ("octopis-scalability-sim", True),
        ("octopis-publishers-sim", True),
        ("octopis-stability", False),
    ):
        cells = _resolved(name)
        assert [n for n, _ in cells] == ["bid", "snr", "dnr"]
        for n, spec in cells:
            assert spec.routing == n and backend_class(spec.backend).virtual_time is virtual, name
            assert spec.brokers.service_us > 0, name
    [stability] = select(load_rows(), ["octopis-stability"])
    stabilise = next(e for e in stability.effects if e.metric.startswith("stability."))
    assert stabilise.timed and stabilise.at_most == 0.0  # a time: a host-bound run is left out of it


def test_the_table_says_whether_a_rows_runs_were_of_the_spec_it_resolves_to_today(tmp_path: Path) -> None:
    """A record whose runs' fingerprints are the row's cells' today reads unchanged; one run of another
    spec (an edited spec file, scale or default) is counted and the row is marked for a re-run."""
    from scotbed.orchestrator.reproduce.cells import campaign_of, cell_fingerprints

    row = next(r for r in load_rows() if r.name == "octopis-scalability")
    today = cell_fingerprints(campaign_of(row, quick=False, repetitions=2))
    record = _record([20, 15]).model_copy(update={"spec_commit": "c0ffee"})
    fresh = record.model_copy(
        update={"runs": [r.model_copy(update={"spec_fingerprint": today[r.cell]}) for r in record.runs]}
    )
    doc = tmp_path / "r.md"
    write_doc(doc, [row], chosen_records([row], {row.name: fresh}))
    line = next(x for x in doc.read_text().splitlines() if x.startswith("- Spec:"))
    assert "`experiments/octopis-static.yaml` last changed at commit `c0ffee` when measured" in line
    assert "unchanged since: every run's resolved spec is the row's today" in line
    edited = fresh.model_copy(update={"runs": [*fresh.runs[:-1], record.runs[-1]]})
    write_doc(doc, [row], chosen_records([row], {row.name: edited}))
    line = next(x for x in doc.read_text().splitlines() if x.startswith("- Spec:"))
    assert "changed after this measurement: 1 of 4 runs' resolved specs differ" in line
    assert "`scotbed reproduce octopis-scalability` measures it again" in line


def _steps_row(**doc: object) -> Row:
    """The link-matching-steps row at a small scale (300 subscriptions on 4 brokers, 2 seeds)."""
    from scotbed.orchestrator.reproduce.rows import _row

    [row] = select(load_rows(), ["link-matching-steps"])
    small = ["subscriptions=300", "brokers=4", "notifications=10", "matching=0.05", "seed=5"]
    return _row(
        {
            "name": row.name,
            "system": row.system,
            "paper": row.paper,
            "status": row.status,
            "computed": row.computed,
            "compare": ["centralised", "link-matching-0-hops", "link-matching-3-hops"],
            "repetitions": 2,
            "scale": small,
            "effects": [
                {
                    "label": "steps",
                    "metric": "matching.steps",
                    "variant": "link-matching-3-hops",
                    "baseline": "centralised",
                    "at_least": 0.0,
                },
            ],
            **doc,
        }
    )


def test_a_computed_row_records_every_seeds_series_with_no_spec_oracle_or_validity(tmp_path: Path) -> None:
    from scotbed.analysis.link_matching_steps import steps_by_hops
    from scotbed.orchestrator.reproduce.runner import compute

    row = _steps_row()
    record = compute(row, quick=False, repetitions=None)
    assert [(r.cell, r.repetition) for r in record.runs] == [
        (f"{name},seed={seed}", k)
        for k, seed in enumerate((5, 6))
        for name in ("centralised", "link-matching-0-hops", "link-matching-3-hops")
    ]
    assert all(r.correct is None and r.validity == "" for r in record.runs)
    assert record.scale == list(row.scale) and record.command == "scotbed reproduce link-matching-steps"
    assert record.spec_commit is not None
    direct = steps_by_hops(300, 4, 10, 6, 0.05)
    figures = {r.compare: r.figures["matching.steps"] for r in record.runs if r.repetition == 1}
    assert figures == {
        "centralised": direct.centralised,
        "link-matching-0-hops": direct.link_matching[0],
        "link-matching-3-hops": direct.link_matching[3],
    }
    assert len({r.spec_fingerprint for r in record.runs}) == 2  # one per seed
    assert compute(row, quick=False, repetitions=None).runs[0].figures == record.runs[0].figures  # pure
    doc = tmp_path / "r.md"
    write_doc(doc, [row], chosen_records([row], {row.name: record}))
    text = doc.read_text()
    assert "- Runs: computed, no broker runs: 6 figures from seeds 5, 6, " in text
    assert "no spec, no validity verdict, no oracle" in text
    assert "- Parameters: `subscriptions=300 brokers=4 notifications=10 matching=0.05 seed=5`" in text
    assert "unchanged since: the row's parameters and seeds are those of every figure" in text
    bigger = _steps_row(scale=["subscriptions=400", "brokers=4", "notifications=10", "seed=5"])
    write_doc(doc, [bigger], chosen_records([bigger], {row.name: record}))
    assert "its parameters or seeds changed after this measurement" in doc.read_text()


def _steps(centralised: float, link_matching: dict[int, float], seeds: int = 3) -> RowRecord:
    """A link-matching-steps record whose every seed computed the same steps."""
    series = {"centralised": centralised} | {f"link-matching-{h}-hops": v for h, v in link_matching.items()}
    runs = [
        run_figures(f"{name},seed={k + 1}", name, k, {"matching.steps": v * (1 + k / 10)})
        for k in range(seeds)
        for name, v in series.items()
    ]
    return row_record("link-matching-steps", runs, seeds)


def test_the_matching_steps_row_judges_the_slides_bounds_at_4_5_and_6_hops(tmp_path: Path) -> None:
    [row] = select(load_rows(), ["link-matching-steps"])
    hops = {4: "at_most", 5: "at_least", 6: "at_least"}
    effects = {int(e.variant.split("-")[2]): e for e in row.effects}
    assert {h: "at_most" if effects[h].at_most == 0.0 else "at_least" for h in hops} == hops
    assert {e.baseline for e in row.effects} == {"centralised"} and row.computed == "link-matching-steps"
    as_slides = _steps(100.0, {4: 95.0, 5: 130.0, 6: 160.0})  # "not more" up to 4 hops, "more" beyond
    fewer = _steps(100.0, {4: 60.0, 5: 70.0, 6: 80.0})
    for record, want in ((as_slides, ["agrees"] * 3), (fewer, ["agrees", "disagrees", "disagrees"])):
        judged = {
            j.effect.variant: j.verdict for j in chosen_records([row], {row.name: record})[row.name].judged
        }
        assert [judged[f"link-matching-{h}-hops"] for h in hops] == want
    doc = tmp_path / "r.md"
    write_doc(doc, [row], chosen_records([row], {row.name: fewer}))
    text = doc.read_text()
    want = (
        "| cumulative matching steps, 5 hops, link-matching-5-hops vs centralised |"
        " at least +0 % (a bound in the text) | -30 % [-30 %, -30 %] (n = 3) | disagrees |"
    )
    assert want in text
    assert "- Computation: `link-matching-steps` (`scotbed.analysis.link_matching_steps`)" in text


def test_a_computed_row_names_a_registered_computation_and_no_spec() -> None:
    from scotbed.orchestrator.reproduce.rows import _row

    base = {"name": "r", "system": "s", "paper": "p", "status": "built"}
    for given in ({"computed": "nope"}, {"computed": "link-matching-steps", "spec": "experiments/x.yaml"}):
        with pytest.raises(RowsError, match="row r: computed: one of link-matching-steps"):
            _row({**base, **given})
    assert _row({**base, "computed": "link-matching-steps"}).runnable
    with pytest.raises(RowsError, match="unexpected keyword argument 'hops'"):
        from scotbed.orchestrator.reproduce.runner import compute

        compute(_steps_row(scale=["subscriptions=30", "brokers=2", "notifications=1", "hops=3"]), False, 1)


PAPER_SCALE = ("ci-paper-alpha-0.2", "ci-paper-alpha-0.5", "ci-paper-alpha-0.8")


def _selforg(row: Row, costs: dict[str, float], seeds: int = 3) -> RowRecord:
    """A record of ``row`` whose every seed computed ``costs`` (per series) in each of its metrics."""
    runs = [
        run_figures(
            f"{name},seed={k + 1}", name, k, {e.metric: costs[name] * (1 + k / 100) for e in row.effects}
        )
        for k in range(seeds)
        for name in row.compare
    ]
    return row_record(row.name, runs, seeds)


def test_the_paper_scale_self_organising_rows_compute_the_papers_configuration_at_their_alpha() -> None:
    from scotbed.orchestrator.reproduce.computed import parameters

    rows = select(load_rows(), list(PAPER_SCALE))
    assert [r.name for r in rows] == list(PAPER_SCALE)
    for row in rows:
        given = parameters(row, quick=False)
        assert row.computed == "selforg-paper" and row.repetitions == 3
        assert given["alpha"] == float(row.name.rsplit("-", 1)[1])
        # the paper's 100 brokers, 50 types and η 4 are the computation's defaults: no row sets them
        assert {"brokers", "types", "eta"}.isdisjoint(given) and given["rate"] == 0.02
        against_others = {(e.baseline, e.metric) for e in row.effects if e.variant == "ci"}
        assert {"lmst", "lmit"} <= {b for b, _ in against_others}
        assert {m for _, m in against_others} == {
            "selforg.cost_per_notification",
            "selforg.cost_with_overhead_per_notification",
        }
    low, mid, high = rows
    for row in (low, high):  # §5.3 compares with the static tree at no α but the default
        assert all(e.baseline != "static" for e in row.effects)
    assert {e.variant for e in mid.effects if e.baseline == "static"} == {"lmst", "lmit", "ci"}


def test_the_alpha_05_row_judges_fig_4s_and_fig_5s_claims(tmp_path: Path) -> None:
    [row] = select(load_rows(), ["ci-paper-alpha-0.5"])
    as_paper = {"static": 100.0, "lmst": 80.0, "lmit": 85.0, "ci": 70.0, "ci-reconfiguration": 2.0}
    for h in ("lmst", "lmit", "ci"):  # a rise at each redraw, then a recovery below it
        as_paper |= {
            f"{h}-before-links-redraw": 70.0,
            f"{h}-after-links-redraw": 90.0,
            f"{h}-before-brokers-redraw": 72.0,
            f"{h}-after-brokers-redraw": 88.0,
            f"{h}-end": 71.0,
        }
    judged = chosen_records([row], {row.name: _selforg(row, as_paper)})[row.name].judged
    assert {j.verdict for j in judged} == {"agrees"} and len(judged) == len(row.effects)
    costly = as_paper | {"ci": 90.0, "ci-reconfiguration": 9.0, "ci-end": 95.0}
    judged = chosen_records([row], {row.name: _selforg(row, costly)})[row.name].judged
    verdicts = {(j.effect.variant, j.effect.baseline, j.effect.metric): j.verdict for j in judged}
    cost = "selforg.cost_per_notification"
    assert verdicts[("ci", "static", cost)] == "agrees"
    assert verdicts[("ci", "lmst", cost)] == verdicts[("ci", "lmit", cost)] == "disagrees"
    assert verdicts[("ci-reconfiguration", "ci", cost)] == "disagrees"  # 10 % of the adapted network's
    counted = "selforg.cost_with_overhead_per_notification"
    assert verdicts[("ci-end", "ci-after-brokers-redraw", counted)] == "disagrees"
    doc = tmp_path / "r.md"
    write_doc(doc, [row], chosen_records([row], {row.name: _selforg(row, costly)}))
    text = doc.read_text()
    want = (
        "| reconfiguration messages' cost against the adapted network's (Fig. 5), ci-reconfiguration vs ci"
        " | at most -97 % (a bound in the text) | -90 % [-90 %, -90 %] (n = 3) | disagrees |"
    )
    assert want in text
    assert "- Computation: `selforg-paper` (`scotbed.selforg.paper`)" in text
    assert "less than 3% of the cost of the adapted network" in text


def test_the_eta_row_judges_fig_5s_best_neighbourhood_broadcasts_and_reconfigurations(tmp_path: Path) -> None:
    from scotbed.orchestrator.reproduce.computed import parameters

    [row] = select(load_rows(), ["ci-paper-eta"])
    assert row.computed == "selforg-paper-eta" and parameters(row, quick=False)["etas"] == [2, 4, 6]
    reconfiguring = [e for e in row.effects if e.variant.endswith("-reconfiguration")]
    assert [(e.baseline, e.at_most) for e in reconfiguring] == [(f"ci-eta-{k}", -0.97) for k in (2, 4, 6)]
    best_at_4 = {"static": 100.0, "ci-eta-2": 90.0, "ci-eta-4": 80.0, "ci-eta-6": 85.0}
    best_at_4 |= {f"ci-eta-{k}-reconfiguration": 2.0 for k in (2, 4, 6)}
    judged = chosen_records([row], {row.name: _selforg(row, best_at_4)})[row.name].judged
    verdicts = {(j.effect.variant, j.effect.baseline, j.effect.metric): j.verdict for j in judged}
    counted = "selforg.cost_with_overhead_per_notification"
    assert (
        verdicts[("ci-eta-2", "ci-eta-4", counted)] == verdicts[("ci-eta-6", "ci-eta-4", counted)] == "agrees"
    )
    # the same figure in every metric: the broadcasts at η 2 cost more than at η 4 here, against the text
    assert verdicts[("ci-eta-4", "ci-eta-2", "selforg.broadcast_per_notification")] == "disagrees"
    assert verdicts[("ci-eta-6", "ci-eta-4", "selforg.broadcast_per_notification")] == "agrees"
    doc = tmp_path / "r.md"
    write_doc(doc, [row], chosen_records([row], {row.name: _selforg(row, best_at_4)}))
    text = doc.read_text()
    assert "- Computation: `selforg-paper-eta` (`scotbed.selforg.paper`)" in text
    assert "The biggest cost advantage is gained for η=4" in text


def test_a_records_commit_is_dirty_for_changed_code_not_for_the_tables_own_outputs(tmp_path: Path) -> None:
    """A row measured after another finds that one's record and table rewritten in the checkout: those
    are outputs of the command, so the commit stays clean; a changed source file makes it dirty."""
    import subprocess

    from scotbed.orchestrator.reproduce.record import git_commit

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    git("init", "-q")
    (tmp_path / "docs" / "reproduction").mkdir(parents=True)
    (tmp_path / "docs" / "reproduction" / "row.json").write_text("{}")
    (tmp_path / "docs" / "reproduction.md").write_text("# table\n")
    (tmp_path / "spec.yaml").write_text("seed: 1\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    head = git("rev-parse", "HEAD")
    (tmp_path / "docs" / "reproduction" / "row.json").write_text('{"runs": []}')
    (tmp_path / "docs" / "reproduction.md").write_text("# table, rewritten\n")
    assert git_commit(tmp_path) == head
    (tmp_path / "spec.yaml").write_text("seed: 2\n")
    assert git_commit(tmp_path) == head + "+dirty"
