"""The unsubscription-burst scenario (script generator) and its metrics block, without I/O."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from scotbed import topology
from scotbed.analysis.pruning import block, core_brokers
from scotbed.filters import Filter
from scotbed.workloads.pruning_burst import PROBE_PREFIX, BurstScenario, main, script
from scotbed.workloads.script import parse

ROOT = Path(__file__).resolve().parent.parent


def _filters(lines: list[dict[str, object]]) -> dict[str, Filter]:
    return {str(x["sub_id"]): Filter.from_json(x["filter"]) for x in lines if x["op"] == "subscribe"}  # type: ignore[arg-type]


def test_the_scenario_places_and_covers_as_the_paper_does() -> None:
    sc = BurstScenario()
    lines = script(sc)
    ops = Counter(str(x["op"]) for x in lines)
    assert (ops["subscribe"], ops["unsubscribe"], ops["publish"]) == (16 * 20 + 8, 8, 160 + 100 + 40)
    subs = [x for x in lines if x["op"] == "subscribe"]
    assert {str(x["broker"]).split("-")[1][0] for x in subs} == {"s"}  # subscriber edges only
    pubs = [x for x in lines if x["op"] == "publish"]
    assert {str(x["broker"]) for x in pubs} == {"b-p0-0", "b-p1-0"}  # E's publisher edges only
    flt = _filters(lines)
    for r in range(sc.roots):
        kids = [flt[f"r{r}c{c}"] for c in range(sc.children)]
        assert all(flt[f"r{r}"].covers(k) for k in kids)
        home = {
            str(x["broker"]) for x in subs if str(x["sub_id"]).startswith(f"r{r}c") or x["sub_id"] == f"r{r}"
        }
        assert len(home) == 1  # clustered: a family on one edge
        values = range(r * sc.width, (r + 1) * sc.width)
        missed = [v for v in values if not any(k.matches({"x": v}) for k in kids)]
        assert len(missed) == sc.gap
    probes = [x for x in pubs if str(x["pub_id"]).startswith(PROBE_PREFIX)]
    for p in probes:
        wanted = {s for s, f in flt.items() if f.matches(p["attrs"])}  # type: ignore[arg-type]
        assert wanted == {f"m{k}" for k in range(8)}  # every subscriber edge's monitor, nothing else
    assert [x["sub_id"] for x in lines if x["op"] == "unsubscribe"] == [f"r{r}" for r in range(8)]


SCRIPTS = [("selective-pruning-burst", []), ("selective-pruning-burst-scattered", ["--clustered", "false"])]


@pytest.mark.parametrize(("name", "args"), SCRIPTS)
def test_the_committed_scripts_are_the_generators(name: str, args: list[str], tmp_path: Path) -> None:
    out = tmp_path / f"{name}.jsonl"
    main([str(out), *args])
    committed = ROOT / "experiments" / f"{name}.jsonl"
    assert out.read_text() == committed.read_text()
    brokers = [b.id for b in topology.tree(topology.paper_tiered_small()).brokers]
    parsed = parse(committed.read_text(), brokers, str(committed))
    assert len(parsed.ops) == len(script(BurstScenario(clustered=not args)))


def test_core_brokers_only_on_a_tiered_overlay() -> None:
    assert core_brokers([b.id for b in topology.tree(topology.paper_tiered_small()).brokers]) == [
        "b-a-0", "b-b-0", "b-c-0", "b-d-0", "b-e-0",
    ]  # fmt: skip
    assert core_brokers([b.id for b in topology.tree(topology.paper_fig8()).brokers]) == []


def test_the_block_from_per_broker_tables() -> None:
    core = ["b-a-0", "b-b-0"]
    released = pd.DataFrame({"node": ["b-a-0", "b-s0-0"], "released": [3, 5]})
    queues = pd.DataFrame(
        {"node": ["b-a-0", "b-b-0"], "ts_ns": [1, 1], "input_len": [2, 7], "max_output_len": [9, 0]}
    )
    tables = pd.DataFrame(
        {"node": ["b-a-0", "b-b-0", "b-s0-0"], "max_size": [5, 5, 5], "final_size": [4, 2, 10]}
    )
    got = block(released, queues, tables, core, {"count": 0})
    assert got == {
        "core": core,
        "released_total": 8,
        "released_per_core": {"b-a-0": 3, "b-b-0": 0},
        "core_input_queue_max": 7,
        "core_output_queue_max": 9,
        "probe_delay_ms": {"count": 0},
        "core_table_final_mean": 3.0,
        "table_final_total": 16,
    }
