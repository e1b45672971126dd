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
from broker_workload import make_workload

from scotbed import topology
from scotbed.broker.client import BrokerClient, SubscriptionStream
from scotbed.broker.eventlog import read_events
from scotbed.broker.fleet import wait_quiescent
from scotbed.broker.launcher import LocalCluster
from scotbed.config import BrokerConfig
from scotbed.contract import LINK_DOWN, LINK_UP
from scotbed.overlay.tree import Tree, path_edges, repointed
from scotbed.v1 import scotbed_pb2 as pb

FAST_LOG = {"sample_interval_ms": 100.0, "flush_interval_ms": 100.0}


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


async def _swap_scenario(cluster: LocalCluster, tmp: Path) -> None:
    cfgs = {c.id: c for c in cluster.configs}
    a, b, c, d = sorted(cfgs)  # path b-v0-0 .. b-v3-0
    old = Tree.of([(a, b), (b, c), (c, d)])
    new = old.swapped((a, d), (b, c))
    addrs = cluster.addresses()
    clients = {x: BrokerClient(addr) for x, addr in addrs.items()}
    wl = make_workload(sorted(cfgs), n_subs=12, n_pubs=120, seed=18)
    hosts = {s: h for s, h, _ in wl.subs}
    pub_at = {p: h for p, h, _ in wl.pubs}
    try:
        streams: list[SubscriptionStream] = await asyncio.gather(
            *(clients[h].subscribe(s, f, "test") for s, h, f in wl.subs)
        )
        first, second = wl.pubs[:60], wl.pubs[60:]
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
        asyncio.run(_swap_scenario(cluster, tmp_path))
        ids = sorted(c.id for c in cluster.configs)
        for i in ids:
            cluster.terminate(i)
        links = {
            i: [
                (e["ev"], e["link"], e.get("lost"))
                for e in read_events(cluster.event_log(i))
                if e["ev"] in (LINK_UP, LINK_DOWN)
            ]
            for i in ids
        }
    a, b, c, d = ids
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

        async def refused_unknown() -> None:
            async with BrokerClient(rpf.address(a)) as cl:
                for up, down in (([], ["nobody"]), ([pb.NewLink(neighbour=b, address="x:1")], [])):
                    with pytest.raises(grpc.aio.AioRpcError) as e:
                        await cl.relink(up, down)
                    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert [lk.neighbour for lk in (await cl.status()).links] == [b]

        asyncio.run(refused_unknown())
