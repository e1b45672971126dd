"""The unsubscription-burst scenario (script generator) and its metrics block, without I/O."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from scotbed import topology
from scotbed.analysis.pruning import block, core_brokers, inner_brokers
from scotbed.filters import Filter
from scotbed.workloads.pruning_burst import (
    MONITOR_PREFIX,
    PROBE_PREFIX,
    BurstScenario,
    main,
    monitor_id,
    script,
)
from scotbed.workloads.script import parse

ROOT = Path(__file__).resolve().parent.parent


def _filters(lines: list[dict[str, object]]) -> dict[str, Filter]:
    return {str(x["sub_id"]): Filter.from_json(x["filter"]) for x in lines if x["op"] == "subscribe"}  # type: ignore[arg-type]


def test_the_scenario_places_and_covers_as_the_paper_does() -> None:
    sc = BurstScenario()
    lines = script(sc)
    ops = Counter(str(x["op"]) for x in lines)
    subscribes = 16 * 40 + 8  # families and probe monitors: no match-all monitor in §V-B
    assert (ops["subscribe"], ops["unsubscribe"], ops["publish"]) == (subscribes, 8, 480 + 100 + 40)
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
        assert wanted == {f"m{k}" for k in range(8)}  # every subscriber edge's probe monitor
    unsubs = [x["sub_id"] for x in lines if x["op"] == "unsubscribe"]
    assert unsubs == [f"r{r}" for r in range(8)]


def _edges_of(lines: list[dict[str, object]]) -> dict[str, str]:
    return {str(x["sub_id"]): str(x["broker"]) for x in lines if x["op"] == "subscribe"}


def test_random_placement_draws_every_family_member_from_the_subscriber_edges_by_seed() -> None:
    """§V-A: subscribers "randomly distributed among the remaining edge brokers": roots and children
    drawn uniformly from the 8 subscriber edges, the same for the same seed, and nothing else moves
    (the publications are those of the round-robin placement)."""
    sc = BurstScenario(clustered=False, random_placement=True)
    lines = script(sc)
    placed = {k: v for k, v in _edges_of(lines).items() if k.startswith("r")}
    assert len(placed) == sc.roots * (sc.children + 1)
    per_edge = Counter(placed.values())
    assert set(per_edge) == {f"b-s{k}-0" for k in range(8)}
    assert len(set(per_edge.values())) > 1  # not the round-robin's equal shares
    assert _edges_of(script(replace(sc, seed=8))) != _edges_of(lines)
    assert _edges_of(script(sc)) == _edges_of(lines)
    round_robin = script(replace(sc, random_placement=False))
    assert [x for x in lines if x["op"] != "subscribe"] == [x for x in round_robin if x["op"] != "subscribe"]
    clustered = script(replace(sc, clustered=True))
    for r in range(sc.roots):  # clustered and random: a family on one randomly drawn edge
        family = {v for k, v in _edges_of(clustered).items() if k == f"r{r}" or k.startswith(f"r{r}c")}
        assert len(family) == 1


LINK_LIMITED = [
    "--width",
    "58",
    "--children",
    "19",
    "--burst-interval-ms",
    "500",
    "--monitors",
    "0",
    "--history",
    "160",
]
SCATTERED = ["--clustered", "false"]
RANDOM = [*SCATTERED, "--random-placement", "true"]
RANDOM_SCENARIO = BurstScenario(clustered=False, random_placement=True)
LINK_LIMITED_SCENARIO = BurstScenario(width=58, children=19, burst_interval_ms=500.0, monitors=0, history=160)
SCRIPTS = [
    ("selective-pruning-burst", LINK_LIMITED, LINK_LIMITED_SCENARIO),
    (
        "selective-pruning-burst-scattered",
        LINK_LIMITED + SCATTERED,
        replace(LINK_LIMITED_SCENARIO, clustered=False),
    ),
    ("selective-pruning-burst-slow-core", [], BurstScenario()),
    ("selective-pruning-burst-scattered-slow-core", SCATTERED, BurstScenario(clustered=False)),
    ("selective-pruning-burst-random-slow-core", RANDOM, RANDOM_SCENARIO),
    (
        "selective-pruning-burst-random-slow-core-burst3",
        [*RANDOM, "--burst", "3", "--burst-interval-ms", "666.667"],
        replace(RANDOM_SCENARIO, burst=3, burst_interval_ms=666.667),
    ),
    (
        "selective-pruning-burst-random-slow-core-children10",
        [*RANDOM, "--roots", "58", "--children", "10", "--width", "121"],
        replace(RANDOM_SCENARIO, roots=58, children=10, width=121),
    ),
    (
        "selective-pruning-burst-random-slow-core-children50",
        [*RANDOM, "--roots", "13", "--children", "50", "--width", "101"],
        replace(RANDOM_SCENARIO, roots=13, children=50, width=101),
    ),
]


@pytest.mark.parametrize(("name", "args", "scenario"), SCRIPTS)
def test_the_committed_scripts_are_the_generators(
    name: str, args: list[str], scenario: BurstScenario, tmp_path: Path
) -> None:
    out = tmp_path / f"{name}.jsonl"
    main([str(out), *args])
    committed = ROOT / "experiments" / f"{name}.jsonl"
    assert out.read_text() == committed.read_text()
    brokers = [b.id for b in topology.tree(topology.paper_tiered_small()).brokers]
    parsed = parse(committed.read_text(), brokers, str(committed))
    assert len(parsed.ops) == len(script(scenario))


def test_core_brokers_only_on_a_tiered_overlay() -> None:
    for factor in (topology.paper_tiered_small(), topology.paper_tiered()):
        assert core_brokers(topology.tree(factor).to_json()) == [
            "b-a-0", "b-b-0", "b-c-0", "b-d-0", "b-e-0",
        ]  # fmt: skip
    assert core_brokers(topology.tree(topology.paper_fig8()).to_json()) == []
    demo = topology.Scot(topology.paper_fig2(), 3).to_json()  # the quickstart's SCOT: a path a–f
    assert {"b-a-0", "b-b-0", "b-c-0", "b-d-0", "b-e-0"} <= {b["id"] for b in demo["brokers"]}
    assert core_brokers(demo) == []
    assert inner_brokers(demo) == []


def test_inner_brokers_are_the_tier_between_core_and_edges() -> None:
    doc = topology.tree(topology.paper_tiered_small()).to_json()
    assert inner_brokers(doc) == ["b-n0-0", "b-n1-0", "b-n2-0", "b-n3-0"]
    assert len(inner_brokers(topology.tree(topology.paper_tiered()).to_json())) == 18  # 23 inner less A-E


def test_the_block_from_per_broker_tables() -> None:
    core = ["b-a-0", "b-b-0"]
    released = pd.DataFrame({"node": ["b-a-0", "b-s0-0"], "released": [3, 5], "subscriptions": [7, 5]})
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
        "released_subscriptions_per_core": {"b-a-0": 7, "b-b-0": 0},
        "core_input_queue_max": 7,
        "core_output_queue_max": 9,
        "probe_delay_ms": {"count": 0},
        "core_table_final_mean": 3.0,
        "table_final_total": 16,
    }
    fp = pd.DataFrame(
        {"node": ["b-a-0", "b-b-0", "b-n0-0", "b-s0-0"], "ims": [100, 300, 50, 7], "fp_ims": [1, 0, 9, 7]}
    )
    traffic = block(released, queues, tables, core, {"count": 0}, fp, ["b-n0-0"])
    assert traffic["publication_traffic_core"] == {"copies": 400, "false_positive_share": 1 / 400}
    assert traffic["publication_traffic_core_inner"] == {"copies": 450, "false_positive_share": 10 / 450}
    assert "publication_traffic_core" not in got  # no oracle, no traffic figures


def test_match_all_monitors_move_under_fresh_sub_ids_one_edge_on() -> None:
    sc = BurstScenario(monitors=2, moves=3, move_interval_ms=700.0, history=160, history_interval_ms=100.0)
    lines = script(sc)
    edges = [f"b-s{k}-0" for k in range(8)]
    mon = [x for x in lines if str(x.get("sub_id", "")).startswith(MONITOR_PREFIX)]
    subs = [(x["sub_id"], x["broker"]) for x in mon if x["op"] == "subscribe"]
    assert subs == [
        ("all0-0", edges[0]), ("all1-0", edges[1]),  # phase 1, with the families
        ("all0-1", edges[1]), ("all1-1", edges[2]),
        ("all0-2", edges[2]), ("all1-2", edges[3]),
        ("all0-3", edges[3]), ("all1-3", edges[4]),
    ]  # fmt: skip
    order = [(x["op"], x["sub_id"]) for x in mon[2:]]
    for k in range(6):  # each move: the old sub_id leaves, then the fresh one arrives
        old, new = order[2 * k], order[2 * k + 1]
        assert old[0] == "unsubscribe" and new[0] == "subscribe"
        assert new[1] == monitor_id(int(str(old[1])[3]), int(str(old[1]).split("-")[1]) + 1)
    for i, x in enumerate(lines):  # a settle before each move, the implicit ones after its lines
        if x["op"] == "unsubscribe" and str(x["sub_id"]).startswith(MONITOR_PREFIX):
            assert lines[i - 1] == {"op": "settle"} and "settle" not in x and "settle" not in lines[i + 1]
    flt = _filters(lines)
    assert all(flt["all0-0"].covers(flt[f"r{r}"]) for r in range(sc.roots))  # match-all covers every root
    pubs = [x for x in lines if x["op"] == "publish"]
    assert all(flt["all0-0"].matches(p["attrs"]) for p in pubs)  # type: ignore[arg-type]
    start = next(i for i, x in enumerate(lines) if x["op"] == "publish")  # phase 2: moves among the history
    now, at = 0.0, []
    for x in lines[start:]:
        if x["op"] == "sleep":
            now += float(x["ms"])  # type: ignore[arg-type]
        elif str(x.get("sub_id", "")).startswith(MONITOR_PREFIX) and x["op"] == "unsubscribe":
            at.append(now)
    assert at == [0.0, 700.0, 1400.0, 2100.0, 2800.0, 3500.0]  # one move every move_interval_ms
    burst = next(i for i, x in enumerate(lines) if x["op"] == "unsubscribe" and x["sub_id"] == "r0")
    assert all(not str(x.get("sub_id", "")).startswith(MONITOR_PREFIX) for x in lines[burst:])


def test_no_burst_publication_matches_a_root_still_to_be_unsubscribed() -> None:
    """A publication in flight when its root leaves would be a missing delivery no routing caused."""
    sc = BurstScenario()
    lines = script(sc)
    flt = _filters(lines)
    start = next(i for i, x in enumerate(lines) if x["op"] == "unsubscribe")
    gone: set[str] = set()
    seen = Counter[str]()
    for x in lines[start:]:
        if x["op"] == "unsubscribe":
            gone.add(str(x["sub_id"]))
        elif x["op"] == "publish" and not str(x["pub_id"]).startswith(PROBE_PREFIX):
            roots = {f"r{r}" for r in range(sc.roots) if flt[f"r{r}"].matches(x["attrs"])}  # type: ignore[arg-type]
            assert len(roots) == 1 and (roots <= gone or int(min(roots)[1:]) >= sc.burst)
            seen[min(roots)] += 1
    assert sum(seen.values()) == sc.after and any(int(r[1:]) < sc.burst for r in seen)
