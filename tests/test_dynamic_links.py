"""Dynamic links: a tree swap on real ``rpf`` brokers through ``Admin.Relink``, and what it refuses.

The swap here is scripted between two quiet phases (the brokers drain before and after); the
lossless swap under load (docs/self-organising.md) is not built yet.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import grpc
import pytest
from broker_workload import Workload, make_workload

from scotbed import topology
from scotbed.broker.client import BrokerClient, SubscriptionStream
from scotbed.broker.eventlog import read_events
from scotbed.broker.fleet import wait_quiescent
from scotbed.broker.launcher import LocalCluster
from scotbed.config import BrokerConfig
from scotbed.contract import LINK_DOWN, LINK_UP, REFUSED
from scotbed.filters import Filter
from scotbed.routing import algorithm_class, implemented
from scotbed.selforg.analysis.cost import Window, cost_over_time, realised_cost, reconfigurations
from scotbed.selforg.costs import Costs, Edge, total_cost
from scotbed.selforg.tree import Tree, path_edges, repointed
from scotbed.v1 import scotbed_pb2 as pb

FAST_LOG = {"sample_interval_ms": 100.0, "flush_interval_ms": 100.0}
HALF = 60  # publications before the swap; as many after
COSTS = Costs(links={("v0", "v1"): 3.0, ("v0", "v3"): 7.0, ("v2", "v3"): 2.0}, brokers={"v2": 5.0})


def test_a_swap_on_a_path_repoints_only_the_cycle_toward_the_far_side() -> None:
    old = Tree.of([("a", "b"), ("b", "c"), ("c", "d")])
    new = old.swapped(("a", "d"), ("b", "c"))
    assert new.next_hops("a") == {"b": "b", "c": "d", "d": "d"}
    assert repointed(old, new) == {
        "a": {"c": "d", "d": "d"},
        "b": {"c": "a", "d": "a"},
        "c": {"a": "d", "b": "d"},
        "d": {"a": "a", "b": "a"},
    }
    assert repointed(old, old) == {}


def test_cost_over_time_charges_p_per_notif_in_and_c_per_notif_out_per_window() -> None:
    vertex_of = {"b0": "v0", "b1": "v1", "b3": "v3"}
    evs = [
        {"ev": "notif_in", "node": "b0", "link": "", "ts_ns": 100, "pub_id": "p"},
        {"ev": "notif_out", "node": "b0", "link": "b1", "ts_ns": 150, "pub_id": "p"},
        {"ev": "notif_in", "node": "b1", "link": "b0", "ts_ns": 260, "pub_id": "p"},
        {"ev": "match", "node": "b1", "ts_ns": 260, "pub_id": "p"},
        {"ev": "notif_in", "node": "b3", "link": "", "ts_ns": 420, "pub_id": "q"},
        {"ev": "link_up", "node": "b0", "link": "b3", "ts_ns": 300},
        {"ev": "link_up", "node": "b3", "link": "b0", "ts_ns": 300},
    ]
    assert cost_over_time(evs, COSTS, vertex_of, 100) == [
        Window(100, 1.0 + 3.0, 1),
        Window(200, 1.0, 0),
        Window(300, 0.0, 0),
        Window(400, 1.0, 1),
    ]
    assert realised_cost(evs, COSTS, vertex_of) == 6.0
    assert cost_over_time(evs, COSTS, vertex_of, 1000)[0].per_notification == 3.0
    assert reconfigurations(evs) == 1


def _cluster(tmp_path: Path, n: int, routing: str) -> LocalCluster:
    return LocalCluster.from_topology(
        topology.tree(topology.path(n)),
        tmp_path,
        launcher={"stop_grace_s": 5.0},
        routing=routing,
        matching="counting",
        log=FAST_LOG,
    )


def _new_link(to: BrokerConfig, address: str) -> pb.NewLink:
    return pb.NewLink(
        neighbour=to.id, address=address, kind="aCOL", type=to.type, cluster=to.cluster, region=to.vertex
    )


def _im(tree: Tree, hosts: dict[str, str], expected: set[tuple[str, str]], pubs: dict[str, str]) -> int:
    """Inter-broker notifications ``rpf`` sends on ``tree``: the links of each delivery tree."""
    total = 0
    for pid, at in pubs.items():
        targets = {hosts[s] for p, s in expected if p == pid}
        total += len({e for t in targets for e in path_edges(tree.path(at, t))})
    return total


async def _phase(
    clients: dict[str, BrokerClient], addrs: dict[str, str], pubs: list[tuple[str, str, dict[str, object]]]
) -> int:
    """Publish from each host broker, drain; returns inter-broker notifications sent."""
    before = sum(r.counters["notif_out"] for r in (await wait_quiescent(addrs, timeout_s=30)).values())
    by_host: dict[str, list[tuple[str, dict[str, object]]]] = {}
    for pid, host, attrs in pubs:
        by_host.setdefault(host, []).append((pid, attrs))
    await asyncio.gather(*(clients[h].publish(ps, "test") for h, ps in by_host.items()))  # type: ignore[arg-type]
    after = sum(r.counters["notif_out"] for r in (await wait_quiescent(addrs, timeout_s=30)).values())
    return after - before


async def _swap_scenario(cluster: LocalCluster, wl: Workload) -> None:
    cfgs = {c.id: c for c in cluster.configs}
    a, b, c, d = sorted(cfgs)  # path b-v0-0 .. b-v3-0
    old = Tree.of([(a, b), (b, c), (c, d)])
    new = old.swapped((a, d), (b, c))
    addrs = cluster.addresses()
    clients = {x: BrokerClient(addr) for x, addr in addrs.items()}
    hosts = {s: h for s, h, _ in wl.subs}
    pub_at = {p: h for p, h, _ in wl.pubs}
    try:
        streams: list[SubscriptionStream] = await asyncio.gather(
            *(clients[h].subscribe(s, f, "test") for s, h, f in wl.subs)
        )
        first, second = wl.pubs[:HALF], wl.pubs[HALF:]
        im1 = await _phase(clients, addrs, first)
        plan = repointed(old, new)
        moved = await asyncio.gather(
            clients[a].relink([_new_link(cfgs[d], addrs[d])], [], plan[a]),
            clients[d].relink([_new_link(cfgs[a], addrs[a])], [], plan[d]),
            clients[b].relink([], [c], plan[b]),
            clients[c].relink([], [b], plan[c]),
        )
        # every entry of a far-side subscription on a cycle broker moved: a, b toward c, d and back
        far = Counter(hosts.values())
        assert list(moved) == [far[c] + far[d], far[a] + far[b], far[c] + far[d], far[a] + far[b]]
        deadline = time.monotonic() + 10
        while not all(lk.connected for lk in (await clients[a].status()).links):
            assert time.monotonic() < deadline, "the new link did not come up"
            await asyncio.sleep(0.02)
        im2 = await _phase(clients, addrs, second)
        expected = wl.expected()
        deadline = time.monotonic() + 10
        while sum(len(s.received) for s in streams) < len(expected) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        got = Counter((dv.notification.pub_id, s.sub_id) for s in streams for dv in s.received)
        assert set(got) == expected and set(got.values()) == {1}, "lost or duplicated across the swap"
        first_ids = {p for p, _, _ in first}
        assert im1 == _im(old, hosts, {x for x in expected if x[0] in first_ids}, pub_at)
        assert im2 == _im(new, hosts, {x for x in expected if x[0] not in first_ids}, pub_at)
        assert [lk.neighbour for lk in (await clients[b].status()).links] == [a]
        entries = {e.sub_id: e.last_hop for e in (await clients[b].table()).entries}
        assert {s: entries[s] for s, h in hosts.items() if h == d} == {
            s: a for s, h in hosts.items() if h == d
        }
        await asyncio.gather(*(s.close() for s in streams))
    finally:
        await asyncio.gather(*(cl.close() for cl in clients.values()))


@pytest.mark.slow
def test_a_scripted_swap_between_quiet_phases_delivers_exactly_once_on_the_new_tree(tmp_path: Path) -> None:
    with _cluster(tmp_path, 4, "rpf") as cluster:
        wl = make_workload(sorted(c.id for c in cluster.configs), n_subs=12, n_pubs=2 * HALF, seed=18)
        asyncio.run(_swap_scenario(cluster, wl))
        ids = sorted(c.id for c in cluster.configs)
        vertex_of = {c.id: c.vertex for c in cluster.configs}
        for i in ids:
            cluster.terminate(i)
        events = [e for i in ids for e in read_events(cluster.event_log(i))]
        links = {
            i: [
                (e["ev"], e["link"], e.get("lost"))
                for e in events
                if e["node"] == i and e["ev"] in (LINK_UP, LINK_DOWN)
            ]
            for i in ids
        }
    a, b, c, d = ids
    # Eq. 2 as the brokers paid it, per phase, is Eq. 2 computed on that phase's tree
    hosts = {s: vertex_of[h] for s, h, _ in wl.subs}
    old = Tree.of([(a, b), (b, c), (c, d)])
    for phase, tree in ((wl.pubs[:HALF], old), (wl.pubs[HALF:], old.swapped((a, d), (b, c)))):
        ids_ = {p for p, _, _ in phase}
        paid = realised_cost([e for e in events if e.get("pub_id") in ids_], COSTS, vertex_of)
        adjacency = {vertex_of[x]: [vertex_of[y] for y in ys] for x, ys in tree.adjacency.items()}
        want = [(vertex_of[h], [hosts[s] for s, _, f in wl.subs if f.matches(at)]) for _, h, at in phase]
        assert paid == total_cost(adjacency, COSTS, want)
    assert reconfigurations(events) == 1
    assert links == {
        a: [(LINK_UP, d, None)],
        b: [(LINK_DOWN, c, 0)],
        c: [(LINK_DOWN, b, 0)],
        d: [(LINK_UP, a, None)],
    }


def test_relink_is_refused_for_a_plugin_without_dynamic_links_and_for_unknown_neighbours(
    tmp_path: Path,
) -> None:
    with _cluster(tmp_path, 2, "flooding") as flooding:
        a, b = sorted(flooding.addresses())

        async def refused_flooding() -> None:
            async with BrokerClient(flooding.address(a)) as cl:
                with pytest.raises(grpc.aio.AioRpcError) as e:
                    await cl.relink([], [b])
                assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
                assert [lk.neighbour for lk in (await cl.status()).links] == [b]

        asyncio.run(refused_flooding())
    with _cluster(tmp_path / "rpf", 2, "rpf") as rpf:
        a, b = sorted(rpf.addresses())
        cfg_b = next(c for c in rpf.configs if c.id == b)

        async def refused_unknown() -> None:
            async with BrokerClient(rpf.address(a)) as cl:
                for up, down in (
                    ([], ["nobody"]),
                    ([_new_link(cfg_b, "x:1")], []),
                    ([pb.NewLink(neighbour="c", address="x:1", kind="bogus", type="edge")], []),
                ):
                    with pytest.raises(grpc.aio.AioRpcError) as e:
                        await cl.relink(up, down)
                    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert [lk.neighbour for lk in (await cl.status()).links] == [b]

        asyncio.run(refused_unknown())


def test_only_a_plugin_that_declares_it_follows_dynamic_links_not_its_subclasses() -> None:
    assert [n for n in implemented() if algorithm_class(n).dynamic_links] == ["rpf"]


@pytest.mark.parametrize("routing", ["covering-active", "selective-pruning"])
def test_relink_is_refused_by_a_covering_broker_and_its_subscriptions_are_still_routed(
    routing: str, tmp_path: Path
) -> None:
    """Covering inherits rpf's tables but not its relink: its per-neighbour records would miss the new
    link, and every later subscription would fail in routing."""
    with _cluster(tmp_path, 3, routing) as cluster:
        a, b, c = sorted(cluster.addresses())
        cfg_c = next(x for x in cluster.configs if x.id == c)

        async def scenario() -> None:
            async with BrokerClient(cluster.address(a)) as cl:
                with pytest.raises(grpc.aio.AioRpcError) as e:
                    await cl.relink([_new_link(cfg_c, cluster.address(c))], [], {c: c})
                assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
                assert e.value.details() == f"routing {routing!r} does not follow dynamic links"
                stream = await cl.subscribe("s1", "price > 1")
                await wait_quiescent(cluster.addresses(), timeout_s=30)
                async with BrokerClient(cluster.address(c)) as far:
                    assert [x.sub_id for x in (await far.table()).entries] == ["s1"]
                    status = await cl.status()
                    assert [lk.neighbour for lk in status.links] == [b] and status.counters["errors"] == 0
                await stream.close()

        asyncio.run(scenario())


SYMBOLS = ("IBM", "SUN", "HP")
FILTERS = ('symbol = "IBM"', 'symbol = "SUN" and price < 100', "price >= 0")


def _attrs(k: int) -> dict[str, object]:
    return {"symbol": SYMBOLS[k % 3], "price": k % 200}


async def _publish_until(client: BrokerClient, publisher: str, stop: asyncio.Event) -> int:
    """Batches of 5 every 5 ms until ``stop`` is set; pub ids ``<publisher>:<seq>``; returns how many."""
    k = 0
    while not stop.is_set():
        await client.publish([(f"{publisher}:{k + i}", _attrs(k + i)) for i in range(5)], publisher)
        k += 5
        await asyncio.sleep(0.005)
    return k


async def _until_link_carried(client: BrokerClient, neighbour: str, timeout_s: float) -> None:
    """Returns once the broker's link from ``neighbour`` has received a notification, or at the timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = await client.status()
        if any(lk.neighbour == neighbour and lk.received > 0 for lk in status.links):
            return
        await asyncio.sleep(0.05)


async def _adopt(
    clients: dict[str, BrokerClient], cluster: LocalCluster, tree: Tree, add: Edge, remove: Edge, version: int
) -> Tree:
    """Every broker adopts ``version`` = ``tree`` + add − remove, once all have finished the one before."""
    cfgs, addrs = {c.id: c for c in cluster.configs}, cluster.addresses()
    deadline = time.monotonic() + 10
    while True:  # the previous version finished and its removed link closed everywhere
        status = dict(
            zip(clients, await asyncio.gather(*(c.status() for c in clients.values())), strict=True)
        )
        if all(
            r.tree_finished == version - 2 and {lk.neighbour for lk in r.links} == tree.adjacency[b]
            for b, r in status.items()
        ):
            break
        assert time.monotonic() < deadline, f"version {version - 1} did not finish"
        await asyncio.sleep(0.01)
    new = tree.swapped(add, remove)
    plan = repointed(tree, new)
    (x, y), (p, q) = add, remove
    ups = {x: [_new_link(cfgs[y], addrs[y])], y: [_new_link(cfgs[x], addrs[x])]}
    downs = {p: [q], q: [p]}
    await asyncio.gather(
        *(c.relink(ups.get(b, []), downs.get(b, []), plan.get(b, {}), version) for b, c in clients.items())
    )
    return new


async def _swap_under_load(cluster: LocalCluster) -> dict[str, pb.StatusReply]:
    ids = sorted(c.id for c in cluster.configs)  # path v0 .. v4
    addrs = cluster.addresses()
    clients = {x: BrokerClient(addr) for x, addr in addrs.items()}
    try:
        streams = {
            (h, f): await clients[h].subscribe(f"{h}/{n}", f, "test")
            for h in ids
            for n, f in enumerate(FILTERS)
        }
        await wait_quiescent(addrs, timeout_s=30)
        stop = asyncio.Event()
        publishing = [asyncio.create_task(_publish_until(clients[h], h, stop)) for h in ids]
        await asyncio.sleep(0.5)
        tree = await _adopt(clients, cluster, Tree.of(path_edges(ids)), (ids[0], ids[3]), (ids[1], ids[2]), 1)
        await asyncio.sleep(0.5)
        await _adopt(clients, cluster, tree, (ids[1], ids[2]), (ids[0], ids[3]), 2)  # reopens v1-v2
        await _until_link_carried(clients[ids[1]], ids[2], timeout_s=10)
        stop.set()
        published = dict(zip(ids, await asyncio.gather(*publishing), strict=True))
        status = await wait_quiescent(addrs, timeout_s=30)
        for (h, f), s in streams.items():
            flt = Filter.parse(f)
            want = [f"{p}:{k}" for p in ids for k in range(published[p]) if flt.matches(_attrs(k))]
            deadline = time.monotonic() + 10
            while len(s.received) < len(want) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            got = [dv.notification.pub_id for dv in s.received]
            for p in ids:  # per publisher: every matching notification once, in publication order
                mine = [x for x in got if x.startswith(f"{p}:")]
                assert mine == [x for x in want if x.startswith(f"{p}:")], f"{h} {f!r} from {p}"
            assert len(got) == len(want)
        await asyncio.gather(*(s.close() for s in streams.values()))
        return status
    finally:
        await asyncio.gather(*(cl.close() for cl in clients.values()))


@pytest.mark.slow
def test_a_versioned_swap_under_load_loses_duplicates_and_reorders_nothing(tmp_path: Path) -> None:
    with _cluster(tmp_path, 5, "rpf") as cluster:
        status = asyncio.run(_swap_under_load(cluster))
        ids = sorted(c.id for c in cluster.configs)
        for i in ids:
            cluster.terminate(i)
        events = [e for i in ids for e in read_events(cluster.event_log(i))]
        links = {
            i: [
                (e["ev"], e["link"], e.get("lost"))
                for e in events
                if e["node"] == i and e["ev"] in (LINK_UP, LINK_DOWN)
            ]
            for i in ids
        }
    v0, v1, v2, v3, v4 = ids
    assert links == {
        v0: [(LINK_UP, v3, None), (LINK_DOWN, v3, 0)],
        v1: [(LINK_DOWN, v2, 0), (LINK_UP, v2, None)],
        v2: [(LINK_DOWN, v1, 0), (LINK_UP, v1, None)],
        v3: [(LINK_UP, v0, None), (LINK_DOWN, v0, 0)],
        v4: [],
    }
    assert {r.tree_version for r in status.values()} == {2}
    assert {r.tree_finished for r in status.values()} == {1}
    # the reopened link carried traffic; notifications were parked; END(v) crossed each tree-v link both ways
    assert {lk.neighbour for lk in status[v1].links} == {v0, v2}
    assert next(lk.received for lk in status[v1].links if lk.neighbour == v2) > 0
    assert sum(r.counters["parked"] for r in status.values()) > 0
    assert sum(r.counters["neighbour_restarts"] for r in status.values()) == 0  # reopened, not restarted
    ends = sum(r.counters["end_out"] for r in status.values())
    assert ends == 2 * 4 * 2  # END(v) once each way per tree-v link, v = 0, 1
    # a hello that reaches a broker before its own Relink is refused and redialled: logged as
    # what it is, not a drop; nothing drops
    assert [e for e in events if e["ev"] == "drop"] == []
    assert sum(r.counters["drop"] for r in status.values()) == 0
    assert sum(1 for e in events if e["ev"] == REFUSED) == sum(r.counters["refused"] for r in status.values())
