"""Cost redraws (``topology.costs.redraws``, scotbed.selforg.redraws): the spec's timeline, the
tables every broker holds, the flood on real brokers, and Eq. 2 priced per table in force.

The real case is test_selforg_manager's 4-broker path v0–v1–v2–v3 (c_01 = 5, c_12 = 20, c_23 = 5),
but every other pair starts at the default 40: above any C_ij (Eq. 7 weighs path costs by
factors of at most 1, and the dearest path, v0…v3, costs 5 + 20 + 5 + p_1 + p_2 = 32), so no
broker requests anything, whatever its estimates. Redraw 1 sets c_03 = 1 and the reference's one
swap (+v0–v3 −v1–v2) follows, after the redraw; on the new tree every pair's path costs at most
13 < c_12, so it is the only one.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_selforg_manager import ADD, FAST_LOG, PATH, REMOVE, B, _managed_run

from scotbed import topology
from scotbed.broker.client import BrokerClient, SubscriptionStream
from scotbed.broker.eventlog import read_events
from scotbed.broker.launcher import LocalCluster
from scotbed.contract import COST_REDRAW, NOTIF_OUT, TOPO
from scotbed.experiment.spec import SpecError, build_scot, dump_spec, parse_spec
from scotbed.orchestrator.plan import broker_configs
from scotbed.selforg.analysis.cost import cost_over_time, realised_cost, switches, windows_from_counts
from scotbed.selforg.costs import Costs, CostsError, edge, link_delay_ms
from scotbed.selforg.heuristics import heuristic
from scotbed.selforg.records import EVALUATE, SWAP
from scotbed.selforg.redraws import InForce, Redraw, Schedule, parse, tables
from scotbed.selforg.settle import settle
from scotbed.selforg.sim import Setup, Simulation
from scotbed.selforg.simload import C_MAX, Workload, draw_brokers, draw_links

BASE = {"default_link": 40.0, "links": [["v0", "v1", 5.0], ["v1", "v2", 20.0], ["v2", "v3", 5.0]]}
REDRAW_AT_S = 2.5
COSTS = {**BASE, "redraws": [{"at_s": REDRAW_AT_S, "what": "set", "links": [["v3", "v0", 1.0]]}]}
SELF_ORG = {"heuristic": "ci", "eta": 4, "period_ms": 200.0, "bloom_bits": 8192}


def _spec(costs: dict[str, Any], self_organising: dict[str, Any] | None = SELF_ORG) -> Any:
    return _spec_n(4, costs, self_organising)


def _spec_n(n: int, costs: dict[str, Any], self_organising: dict[str, Any] | None) -> Any:
    topo = {"kind": "tree", "acyclic": {"kind": "path", "n": n}, "costs": costs}
    return parse_spec(
        {"name": "x", "routing": "rpf", "topology": topo | {"self_organising": self_organising}}
    )


def _block(costs: dict[str, Any]) -> dict[str, Any]:
    spec = _spec(costs)
    scot = build_scot(spec)
    blocks = [c.topology_manager for c in broker_configs(spec, scot, {b.id: "x:1" for b in scot.brokers})]
    assert all(b == blocks[0] for b in blocks)
    return blocks[0]


# --- the timeline: parsing, tables, the brokers' block -------------------------------------------


def test_a_set_redraw_replaces_the_listed_entries_and_keeps_the_rest() -> None:
    base, timeline = parse(COSTS)
    assert timeline == [Redraw(REDRAW_AT_S, "set", set=Costs(links={edge("v0", "v3"): 1.0}))]
    t0, t1 = tables(base, timeline, ["v0", "v1", "v2", "v3"])
    assert (t0.link("v0", "v3"), t1.link("v0", "v3")) == (40.0, 1.0)
    assert [t1.link(*e) for e in PATH_V] == [5.0, 20.0, 5.0] == [t0.link(*e) for e in PATH_V]


PATH_V = [("v0", "v1"), ("v1", "v2"), ("v2", "v3")]


def test_drawn_redraws_are_the_simulators_draw_with_the_redraws_seed() -> None:
    names = ["v2", "v0", "v1"]
    raw = {"redraws": [{"at_s": 1, "what": "links", "max": 4.0}, {"at_s": 2, "what": "brokers", "seed": 9}]}
    base, timeline = parse(raw)
    t = tables(base, timeline, names)
    assert dict(t[1].links) == draw_links(sorted(names), 4.0, random.Random(1))
    assert t[1].brokers == {} and t[2].links == t[1].links
    assert dict(t[2].brokers) == draw_brokers(sorted(names), C_MAX, random.Random(9))
    assert all(0 <= c <= 4.0 for c in t[1].links.values()) and len(t[1].links) == 3
    assert tables(base, timeline, names) == t  # the analysis recomputes exactly what the brokers got


@pytest.mark.parametrize(
    ("redraws", "fragment"),
    [
        ([{"at_s": 1, "what": "flip"}], "redraws[0].what: 'flip' is not allowed"),
        ([{"at_s": 2, "what": "links"}, {"at_s": 2, "what": "links"}], "redraws[1].at_s: 2.0 is not after"),
        ([{"at_s": 1, "what": "set"}], "redraws[0]: what: set needs links and/or brokers"),
        (
            [{"at_s": 1, "what": "set", "max": 3.0, "brokers": {"v1": 1}}],
            "['max'] not allowed with what: set",
        ),
        (
            [{"at_s": 1, "what": "links", "links": [["v0", "v1", 1]]}],
            "['links'] not allowed with what: links",
        ),
        ([{"at_s": 1, "what": "set", "links": [["v0", "v0", 1]]}], "redraws[0].links[0]: a link needs two"),
        ([{"at_s": 1, "what": "set", "brokers": {"v9": 1.0}}], "topology.costs: v9 not vertices"),
    ],
)
def test_bad_timelines_are_refused_naming_the_key(redraws: list[dict[str, Any]], fragment: str) -> None:
    with pytest.raises(SpecError) as e:
        _spec({**BASE, "redraws": redraws})
    assert any(fragment in p for p in e.value.problems), e.value.problems


def test_redraws_need_the_managers_that_apply_them() -> None:
    with pytest.raises(SpecError) as e:
        _spec(COSTS, None)
    assert "topology.costs.redraws: need topology.self_organising" in " ".join(e.value.problems)


def test_parse_refuses_what_the_spec_model_cannot_check() -> None:
    with pytest.raises(CostsError, match=r"redraws\[0\].at_s: want seconds >= 0"):
        parse({"redraws": [{"at_s": -1, "what": "links"}]})
    with pytest.raises(CostsError, match=r"redraws\[0\].seed: want an integer"):
        parse({"redraws": [{"at_s": 1, "what": "links", "seed": True}]})


def test_the_brokers_block_holds_every_table_over_broker_ids() -> None:
    block = _block(COSTS)
    assert block["costs"]["links"] == [[B[0], B[1], 5.0], [B[1], B[2], 20.0], [B[2], B[3], 5.0]]
    assert block["redraws"] == [
        {
            "at_s": REDRAW_AT_S,
            "costs": {
                "default_link": 40.0,
                "default_broker": 1.0,
                "links": [[B[0], B[1], 5.0], [B[0], B[3], 1.0], [B[1], B[2], 20.0], [B[2], B[3], 5.0]],
                "brokers": {},
            },
        }
    ]
    assert "redraws" not in _block(BASE)


def test_the_schedule_switches_forward_only() -> None:
    s = Schedule([Costs(), Costs(default_link=1.0), Costs(default_link=2.0)], [1.0, 3.0])
    assert [s.due(t) for t in (0.0, 0.99, 1.0, 2.9, 3.0, 99.0)] == [0, 0, 1, 1, 2, 2]
    assert s.learn(2) and s.costs.default_link == 2.0
    assert not s.learn(1) and not s.learn(2) and s.index == 2
    with pytest.raises(ValueError, match="cost table 3 unknown"):
        s.learn(3)


def test_each_event_is_priced_with_the_table_in_force_at_its_broker() -> None:
    cheap, dear = Costs(default_link=1.0, default_broker=0.0), Costs(default_link=7.0, default_broker=2.0)
    evs = [
        {"ts_ns": 100, "ev": "notif_in", "node": "a", "link": ""},
        {"ts_ns": 110, "ev": "notif_out", "node": "a", "link": "b"},
        {"ts_ns": 150, "ev": COST_REDRAW, "node": "a", "n": 1},
        {"ts_ns": 160, "ev": "notif_in", "node": "b", "link": "a"},  # b has not switched: table 0
        {"ts_ns": 170, "ev": "notif_out", "node": "a", "link": "b"},
        {"ts_ns": 180, "ev": COST_REDRAW, "node": "b", "n": 1},
        {"ts_ns": 250, "ev": "notif_in", "node": "b", "link": "a"},
    ]
    assert switches(evs) == {"a": [(150, 1)], "b": [(180, 1)]}
    in_force = InForce([cheap, dear], switches(evs))
    vertex_of = {"a": "a", "b": "b"}
    assert realised_cost(evs, in_force, vertex_of) == 0 + 1 + 0 + 7 + 2
    windows = cost_over_time(evs, in_force, vertex_of, 100)
    assert [(w.cost, w.published) for w in windows] == [(8.0, 1), (2.0, 0)]
    counts = [(0, "notif_in", "a", "", 1, 0), (0, "notif_out", "a", "b", 1, 0)]
    counts += [
        (0, "notif_in", "b", "a", 1, 0),
        (0, "notif_out", "a", "b", 1, 1),
        (1, "notif_in", "b", "a", 1, 1),
    ]
    assert windows_from_counts(counts, in_force, vertex_of, 100, 100) == windows


# --- on real brokers ----------------------------------------------------------------------------------


def test_the_reference_swaps_only_on_the_redrawn_table() -> None:
    base, timeline = parse(COSTS)
    t0, t1 = tables(base, timeline, ["v0", "v1", "v2", "v3"])
    ids = {f"n{k}" for k in range(100)}
    ren = {f"v{i}": b for i, b in enumerate(B)}
    on = [
        Costs(t.default_link, t.default_broker, {edge(ren[u], ren[v]): c for (u, v), c in t.links.items()})
        for t in (t0, t1)
    ]
    swaps = [settle(PATH, c, {b: ids for b in B}, heuristic("ci"), 4).swaps for c in on]
    assert swaps[0] == []
    assert [(s.inputs["add"], s.inputs["remove"]) for s in swaps[1]] == [(ADD, REMOVE)]


def test_a_redraw_on_real_brokers_reaches_every_manager_and_the_swap_follows(tmp_path: Path) -> None:
    block = _block(COSTS)
    with LocalCluster.from_topology(
        topology.tree(topology.path(4)),
        tmp_path,
        launcher={"stop_grace_s": 5.0},
        routing="rpf",
        matching="counting",
        log=FAST_LOG,
        topology_manager=block,
    ) as cluster:
        asyncio.run(_managed_run(cluster, seconds=5.0))
        for b in B:
            cluster.terminate(b)
        events = [e for b in B for e in read_events(cluster.event_log(b))]
    redraws = {e["node"]: e for e in events if e["ev"] == COST_REDRAW}
    assert sorted(redraws) == B and {e["n"] for e in redraws.values()} == {1}
    assert len([e for e in events if e["ev"] == COST_REDRAW]) == 4  # once per broker
    first = redraws[B[0]]["ts_ns"]  # the sequencer starts the flood
    assert all(first <= e["ts_ns"] < first + 1_000_000_000 for e in redraws.values())
    swaps = [e for e in events if e["ev"] == TOPO and e["phase"] == SWAP]
    assert [(json.loads(e["inputs"])["add"], json.loads(e["inputs"])["remove"]) for e in swaps] == [
        (list(ADD), list(REMOVE))
    ]
    assert swaps[0]["ts_ns"] > max(e["ts_ns"] for e in redraws.values())
    # the exact costs the managers decided with: c_03 = 40 before the redraw, 1 after
    c03 = [
        (e["ts_ns"] > redraws[e["node"]]["ts_ns"], json.loads(e["inputs"])["c_ij"])
        for e in events
        if e["ev"] == TOPO
        and e["phase"] == EVALUATE
        and {e["node"], json.loads(e["inputs"])["path"][-1]} == {B[0], B[3]}
    ]
    # (an evaluation before the redraw needs publications before it: a loaded host may start them late)
    assert (True, 1.0) in set(c03) and set(c03) <= {(False, 40.0), (True, 1.0)}
    # Eq. 2 as paid: only c_03 changed, and v0–v3 carries notifications only after the redraw
    base, timeline = parse(COSTS)
    vertex_of = {b: f"v{i}" for i, b in enumerate(B)}
    t = tables(base, timeline, sorted(vertex_of.values()))
    in_force = InForce(t, switches(events))
    over_03 = sum(1 for e in events if e["ev"] == NOTIF_OUT and edge(e["node"], e["link"]) == ADD)
    assert over_03 > 0
    assert (
        realised_cost(events, in_force, vertex_of) == realised_cost(events, t[0], vertex_of) - 39.0 * over_03
    )
    t0 = min(e["ts_ns"] for e in events if e["ev"] in ("notif_in", "notif_out"))
    rows = Counter(
        ((e["ts_ns"] - t0) // 10**9, e["ev"], e["node"], e["link"], in_force.index(e["node"], e["ts_ns"]))
        for e in events
        if e["ev"] in ("notif_in", "notif_out")
    )
    counts = [(w, ev, node, link, n, k) for (w, ev, node, link, k), n in rows.items()]
    assert {k for *_, k in counts} in ({0, 1}, {1})  # {1}: every publication after the redraw
    assert windows_from_counts(counts, in_force, vertex_of, t0, 10**9) == cost_over_time(
        events, in_force, vertex_of, 10**9
    )


# --- cost-derived link latency ------------------------------------------------------------------------

P3 = [f"b-v{i}-0" for i in range(3)]
LATENCY_COSTS = {
    "default_link": 40.0,  # above any path's cost: no broker requests, the path stays
    "links": [["v0", "v1", 10.0], ["v1", "v2", 20.0]],
    "redraws": [{"at_s": 2.0, "what": "set", "links": [["v1", "v2", 4.0]]}],
}
MS_PER_COST = 5.0


def test_link_delay_is_the_cost_times_the_knob() -> None:
    assert link_delay_ms(20.0, MS_PER_COST) == 100.0 and link_delay_ms(20.0, 0.0) == 0.0


async def _one_trip(clients: dict[str, BrokerClient], stream: SubscriptionStream, k: int) -> float:
    """Seconds from publishing at v0 to delivery at v2."""
    start = time.monotonic()
    await clients[P3[0]].publish([(f"p:{k}", {"price": 1})], "p")
    await stream.next(timeout=10.0)
    return time.monotonic() - start


async def _latency_run(addrs: dict[str, str]) -> tuple[dict[str, dict[str, float]], ...]:
    clients = {b: BrokerClient(a) for b, a in addrs.items()}
    try:
        stream = await clients[P3[2]].subscribe("s", "price >= 0", "test")
        # not wait_quiescent: on delayed links the manager's broadcasts are nearly always unacked
        deadline = time.monotonic() + 15
        while not (await clients[P3[0]].table()).entries and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

        async def delays() -> dict[str, dict[str, float]]:
            replies = await asyncio.gather(*(clients[b].status() for b in P3))
            return {
                b: {lk.neighbour: lk.latency_ms for lk in r.links} for b, r in zip(P3, replies, strict=True)
            }

        before, trip0 = await delays(), await _one_trip(clients, stream, 0)
        # a redraw during the trip lowers the latency, which releases what the line held (DelayLine)
        held = (await delays())[P3[2]][P3[1]] == 100.0
        deadline = time.monotonic() + 15
        while (after := await delays())[P3[2]][P3[1]] != 20.0 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        trip1 = await _one_trip(clients, stream, 1)
        await stream.close()
        return before, after, {"trip": {"before": trip0, "after": trip1, "held": held}}
    finally:
        await asyncio.gather(*(c.close() for c in clients.values()))


def test_cost_derived_latency_delays_each_link_and_follows_a_redraw(tmp_path: Path) -> None:
    spec = _spec_n(3, LATENCY_COSTS, {**SELF_ORG, "latency_ms_per_cost": MS_PER_COST})
    scot = build_scot(spec)
    block = broker_configs(spec, scot, {b.id: "x:1" for b in scot.brokers})[0].topology_manager
    with LocalCluster.from_topology(
        topology.tree(topology.path(3)),
        tmp_path,
        launcher={"stop_grace_s": 5.0},
        routing="rpf",
        matching="counting",
        log=FAST_LOG,
        topology_manager=block,
    ) as cluster:
        before, after, trips = asyncio.run(_latency_run(cluster.addresses()))
    # one-way delays, both directions: 10 × 5 and 20 × 5 ms, then c_12 = 4 makes v1–v2 20 ms
    assert before == {P3[0]: {P3[1]: 50.0}, P3[1]: {P3[0]: 50.0, P3[2]: 100.0}, P3[2]: {P3[1]: 100.0}}
    assert after == {P3[0]: {P3[1]: 50.0}, P3[1]: {P3[0]: 50.0, P3[2]: 20.0}, P3[2]: {P3[1]: 20.0}}
    # the trips take at least the emulated delays (an upper bound would time the host's load, not the
    # emulation: the delays in force are the exact figures above)
    # the path v0–v1–v2: 50 + 100 ms at least, or 50 + 20 ms when the redraw came during the trip
    assert trips["trip"]["before"] >= (0.150 if trips["trip"]["held"] else 0.070)
    assert trips["trip"]["after"] >= 0.070  # 50 + 20 ms at least


def test_the_simulator_redraws_with_the_same_tables_code() -> None:
    load = Workload(brokers=5, types=2, subscribers=2, alpha=0.25)
    setup = Setup(
        load=load, heuristic="ci", duration=1000.0, redraws=((300.0, "links"), (600.0, "brokers")), seed=4
    )
    sim = Simulation(setup)
    first = sim.costs
    sim.run()
    names, (c_max, p_max) = load.names(), load.maxima()
    assert dict(sim.costs.links) == draw_links(names, c_max, random.Random(7001)) != dict(first.links)
    assert dict(sim.costs.brokers) == draw_brokers(names, p_max, random.Random(7002)) != dict(first.brokers)


def test_a_timeline_round_trips_through_the_resolved_spec() -> None:
    spec = _spec({**BASE, "redraws": [{"at_s": 1, "what": "links", "max": 3.0}, *COSTS["redraws"]]})
    again = parse_spec(yaml.safe_load(dump_spec(spec)))
    assert again.topology.costs == spec.topology.costs
    assert again.topology.costs.timeline() == spec.topology.costs.timeline()
