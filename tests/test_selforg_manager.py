"""The topology manager (scotbed.selforg.node on real brokers, scotbed.selforg.manager).

The fixed case: the path v0–v1–v2–v3 with c_01 = 5, c_12 = 20, c_23 = 5, c_03 = 1 (other pairs 30),
p = 1. v0 publishes, v1, v2 and v3 consume everything, so I = N for every pair. Only v0 and v3 ever
request (C_03 = 5 > c_03 = 1 from either end; every other pair's C stays below its c at any
estimates, since Eq. 7's factors are at most 1); on the cycle the summed Eq. 8 is least for cutting
v1–v2 (4,400 per 100 notifications against 10,400 for the next), so the one swap is
+v0–v3 −v1–v2, and then no broker requests. The synchronous reference (``settle``) makes the same
decision on exact caches, the simulator on its virtual clock; the managers must make it from Bloom
filters over their real traffic.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, deque
from pathlib import Path
from typing import Any

from scotbed import topology
from scotbed.broker.client import BrokerClient, SubscriptionStream
from scotbed.broker.eventlog import read_events
from scotbed.broker.fleet import wait_quiescent
from scotbed.broker.launcher import LocalCluster
from scotbed.contract import LINK_DOWN, LINK_UP, REFUSED, TOPO, TOPO_OUT
from scotbed.selforg.analysis.cost import Overhead, cost_over_time, overhead, windows_from_counts
from scotbed.selforg.costs import Costs, edge
from scotbed.selforg.heuristics import heuristic
from scotbed.selforg.node import Node, Out, Settings
from scotbed.selforg.records import SWAP
from scotbed.selforg.settle import settle
from scotbed.selforg.sim import Setup, Simulation
from scotbed.selforg.tree import Tree, path_edges
from scotbed.v1 import scotbed_pb2 as pb

B = [f"b-v{i}-0" for i in range(4)]
COSTS = {
    "default_link": 30.0,
    "links": [[B[0], B[3], 1.0], [B[0], B[1], 5.0], [B[1], B[2], 20.0], [B[2], B[3], 5.0]],
}
PATH = Tree.of(path_edges(B))
SUBSCRIBERS = B[1:]
ADD, REMOVE = edge(B[0], B[3]), edge(B[1], B[2])
FAST_LOG = {"sample_interval_ms": 100.0, "flush_interval_ms": 100.0}


def _reference() -> tuple[tuple[str, str], tuple[str, str]]:
    ids = {f"n{k}" for k in range(100)}
    out = settle(PATH, Costs.from_mapping(COSTS), {b: ids for b in B}, heuristic("ci"), 4)
    assert len(out.swaps) == 1
    return out.swaps[0].inputs["add"], out.swaps[0].inputs["remove"]


def test_the_reference_makes_the_one_swap_the_docstring_computes() -> None:
    assert _reference() == (ADD, REMOVE)


def test_the_simulator_makes_the_same_one_swap_on_the_fixed_case() -> None:
    setup = Setup(heuristic="ci", fixed=((B[0], tuple(SUBSCRIBERS)),), duration=5000.0, bloom_bits=8192)
    out = Simulation(setup, tree=PATH, costs=Costs.from_mapping(COSTS)).run()
    assert [(s.inputs["add"], s.inputs["remove"]) for s in out.swaps] == [(ADD, REMOVE)]
    assert out.delivered == out.expected


def _bus(nodes: dict[str, Node], outs: list[tuple[str, Out]], now: float) -> None:
    """Deliver messages FIFO, adopting every committed version at once (a quiet overlay)."""
    queue = deque(outs)
    while queue:
        sender, o = queue.popleft()
        queue.extend((o.to, x) for x in nodes[o.to].receive(now, o.kind, sender, o.fields, o.data))
        for m in nodes.values():
            while m.adoption() is not None:
                queue.extend((m.me, x) for x in m.adopted())
                m.release(now, m.version - 1)


def test_managers_over_an_in_memory_bus_make_the_reference_swap_and_then_hold() -> None:
    settings = Settings("ci", eta=4, period=1.0, bloom_bits=4096)
    costs = Costs.from_mapping(COSTS)
    nodes = {b: Node(b, PATH, costs, settings, {"address": b}) for b in B}
    for k in range(100):
        for b in B:
            nodes[b].cache.add(f"n{k}")
    for rnd in range(4):
        for b in B:  # one broadcast round; the first rounds only teach estimates
            _bus(nodes, [(b, o) for o in nodes[b].broadcast()], float(rnd))
    swaps = [r for n in nodes.values() for r in n.records if r.kind == SWAP]
    assert [(tuple(s.inputs["add"]), tuple(s.inputs["remove"]), s.broker) for s in swaps] == [
        (ADD, REMOVE, B[0])  # granted by the sequencer, the least broker id
    ]
    assert {b: n.version for b, n in nodes.items()} == dict.fromkeys(B, 1)
    assert all(n.trees[1] == PATH.swapped(ADD, REMOVE) for n in nodes.values())
    assert all(n.lock.holder is None for n in nodes.values())


MANAGER = {
    "heuristic": "ci",
    "eta": 4,
    "period_ms": 200.0,
    "bloom_bits": 8192,
    "costs": COSTS,
    "tree": [list(e) for e in sorted(PATH.links)],
}


async def _publish_for(client: BrokerClient, publisher: str, until: float) -> int:
    """Batches of 5 every 10 ms until ``until``; pub ids ``<publisher>:<seq>``; returns how many."""
    k = 0
    while time.monotonic() < until:
        await client.publish(
            [(f"{publisher}:{k + i}", {"price": (k + i) % 100}) for i in range(5)], publisher
        )
        k += 5
        await asyncio.sleep(0.01)
    return k


async def _churn(client: BrokerClient, host: str, until: float) -> set[str]:
    """Subscribe a filter nothing matches every 30 ms and close the one before last, across the
    swap; returns the subscriptions left open (their streams stay open until the run ends)."""
    live: list[SubscriptionStream] = []
    k = 0
    while time.monotonic() < until:
        live.append(await client.subscribe(f"{host}/c{k}", "price < 0", "test"))
        if len(live) > 2:
            await live.pop(0).close()
        k += 1
        await asyncio.sleep(0.03)
    return {s.sub_id for s in live}


async def _managed_run(
    cluster: LocalCluster, seconds: float = 3.0
) -> tuple[dict[str, pb.StatusReply], dict[str, pb.TableReply], set[str]]:
    addrs = cluster.addresses()
    clients = {b: BrokerClient(a) for b, a in addrs.items()}
    try:
        streams = {b: await clients[b].subscribe(f"{b}/all", "price >= 0", "test") for b in SUBSCRIBERS}
        await wait_quiescent(addrs, timeout_s=30)
        until = time.monotonic() + seconds
        churn = [asyncio.create_task(_churn(clients[b], b, until)) for b in B]
        published = await _publish_for(clients[B[0]], B[0], until)
        live = set().union(*await asyncio.gather(*churn)) | {f"{b}/all" for b in SUBSCRIBERS}
        status = await wait_quiescent(addrs, timeout_s=30)
        tables = dict(zip(B, await asyncio.gather(*(clients[b].table() for b in B)), strict=True))
        want = [f"{B[0]}:{k}" for k in range(published)]
        for b, s in streams.items():
            deadline = time.monotonic() + 10
            while len(s.received) < len(want) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert [dv.notification.pub_id for dv in s.received] == want, f"the oracle at {b}"
        await asyncio.gather(*(s.close() for s in streams.values()))
        return status, tables, live
    finally:
        await asyncio.gather(*(c.close() for c in clients.values()))


def test_managers_on_real_brokers_make_the_reference_swap_under_load_and_lose_nothing(tmp_path: Path) -> None:
    with LocalCluster.from_topology(
        topology.tree(topology.path(4)),
        tmp_path,
        launcher={"stop_grace_s": 5.0},
        routing="rpf",
        matching="counting",
        log=FAST_LOG,
        topology_manager=MANAGER,
    ) as cluster:
        status, tables, live = asyncio.run(_managed_run(cluster))
        for b in B:
            cluster.terminate(b)
        events = [e for b in B for e in read_events(cluster.event_log(b))]
    swaps = [e for e in events if e["ev"] == TOPO and e["phase"] == SWAP]
    assert [
        (e["node"], json.loads(e["inputs"])["add"], json.loads(e["inputs"])["remove"]) for e in swaps
    ] == [(B[0], list(ADD), list(REMOVE))]
    assert (tuple(ADD), tuple(REMOVE)) == _reference()
    published = sorted(e["ts_ns"] for e in events if e["ev"] == "notif_in" and e["link"] == "")
    assert published[0] < swaps[0]["ts_ns"] < published[-1], "the swap happened under load"
    links = {
        b: [
            (e["ev"], e["link"], e.get("lost"))
            for e in events
            if e["node"] == b and e["ev"] in (LINK_UP, LINK_DOWN)
        ]
        for b in B
    }
    assert links == {
        B[0]: [(LINK_UP, B[3], None)],
        B[1]: [(LINK_DOWN, B[2], 0)],
        B[2]: [(LINK_DOWN, B[1], 0)],
        B[3]: [(LINK_UP, B[0], None)],
    }
    assert {b: (r.tree_version, r.tree_finished) for b, r in status.items()} == dict.fromkeys(B, (1, 0))
    assert {b: {lk.neighbour for lk in r.links} for b, r in status.items()} == {
        b: set(PATH.swapped(ADD, REMOVE).adjacency[b]) for b in B
    }
    assert all(e["phase"] != SWAP or e["node"] == B[0] for e in events if e["ev"] == TOPO)
    vertex_of = {b: b for b in B}
    costs = Costs.from_mapping(COSTS)
    t0 = min(e["ts_ns"] for e in events if e["ev"] in ("notif_in", "notif_out"))
    paid = cost_over_time(events, costs, vertex_of, 10**9)
    assert windows_from_counts(_counts(events, t0, 10**9), costs, vertex_of, t0, 10**9) == paid
    sent = Counter((e["node"], e["link"], e["kind"]) for e in events if e["ev"] == TOPO_OUT)
    size = Counter()
    for e in events:
        if e["ev"] == TOPO_OUT:
            size[(e["node"], e["link"], e["kind"])] += e["size"]
    over = overhead([(*k, n, size[k]) for k, n in sent.items()], costs, vertex_of)
    assert over.messages == sum(sent.values()) > 0 and set(over.by_kind) >= {
        "bcast",
        "req",
        "newver",
    }
    assert [e for e in events if e["ev"] == "drop"] == []  # a refused hello is ``refused``, not a drop
    assert {e["reason"] for e in events if e["ev"] == REFUSED} <= {"unknown_neighbour"}
    # subscriptions churned across the swap: every broker holds exactly the live ones, each pointing
    # toward its host broker on the new tree (or local)
    hops = {b: PATH.swapped(ADD, REMOVE).next_hops(b) for b in B}
    for b, t in tables.items():
        assert {e.sub_id for e in t.entries} == live, b
        assert all(e.last_hop == hops[b].get(e.host_broker, "") for e in t.entries), b


def test_overhead_prices_each_manager_message_as_c_of_its_link_plus_p_of_its_receiver() -> None:
    costs = Costs.from_mapping({"links": [["v0", "v1", 3.0]], "brokers": {"v1": 2.0}})
    vertex_of = {"b0": "v0", "b1": "v1", "b2": "v2"}
    rows = [("b0", "b1", "bcast", 4, 400), ("b1", "b0", "bcast", 1, 100), ("b1", "b2", "req", 2, 60)]
    assert overhead(rows, costs, vertex_of) == Overhead(
        7, 560, 4 * (3.0 + 2.0) + 1 * (3.0 + 1.0) + 2 * (10.0 + 1.0), {"bcast": 5, "req": 2}
    )


def test_windows_from_counts_is_cost_over_time_on_the_same_events() -> None:
    costs = Costs.from_mapping({"links": [["v0", "v1", 3.0]], "brokers": {"v1": 2.0}})
    vertex_of = {"b0": "v0", "b1": "v1"}
    evs = [
        {"ts_ns": 100, "ev": "notif_in", "node": "b0", "link": ""},
        {"ts_ns": 150, "ev": "notif_out", "node": "b0", "link": "b1"},
        {"ts_ns": 180, "ev": "notif_in", "node": "b1", "link": "b0"},
        {"ts_ns": 420, "ev": "notif_in", "node": "b1", "link": ""},
    ]
    assert windows_from_counts(_counts(evs, 100, 100), costs, vertex_of, 100, 100) == cost_over_time(
        evs, costs, vertex_of, 100
    )


def _counts(events: list[dict[str, Any]], t0: int, window_ns: int) -> list[tuple[int, str, str, str, int]]:
    c = Counter(
        ((e["ts_ns"] - t0) // window_ns, e["ev"], e["node"], e["link"])
        for e in events
        if e["ev"] in ("notif_in", "notif_out")
    )
    return [(*k, n) for k, n in c.items()]
