"""OctopiS SNR/DNR on real broker processes: per-subscription counts, exactly-once, the DNR cases of Fig. 7.

The DNR cases throttle chosen links to near-zero capacity (Admin.SetLinkCapacity)
and park warm-up notifications in their output queues, so the link status table
of the sending broker shows them overloaded (``congestion.queue_threshold`` 0:
one waiting envelope is congestion). The path of the re-routed copy comes from
the brokers' event logs (``notif_out`` with ``link`` and ``dynamic``); the
output-queue lengths come from Admin.Status.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from broker_workload import Workload, make_workload

from scotbed import topology
from scotbed.broker.client import BrokerClient, SubscriptionStream
from scotbed.broker.eventlog import read_events
from scotbed.broker.fleet import flush_all, status_all, tables_all, wait_quiescent
from scotbed.broker.launcher import LocalCluster
from scotbed.broker.sim import SimNetwork
from scotbed.v1 import scotbed_pb2 as pb

FIG2_K3 = topology.Scot(topology.paper_fig2(), 3)
FIG8_K5 = topology.Scot(topology.paper_fig8(), 5)
PER_SUB = {FIG2_K3: 17, FIG8_K5: 74}
EAGER = {"window_ms": 50.0, "ce_threshold": 1.0, "queue_threshold": 0}  # one waiting envelope = congested
NEAR_ZERO = 1e-6  # msgs/s: a throttled queue keeps what it gets until the capacity is restored
WINDOWS = 0.3  # s: several CE windows, so every CE reflects an idle link again

pytestmark = pytest.mark.slow


def start(scot: topology.Scot, workdir: Path, routing: str) -> LocalCluster:
    return LocalCluster.from_topology(
        scot,
        workdir,
        launcher={"stop_grace_s": 10.0, "ready_timeout_s": 240.0},
        routing=routing,
        matching="counting",
        congestion=EAGER,
        log={"sample_interval_ms": 0.0, "flush_interval_ms": 100.0},
    )


def total(status: Mapping[str, pb.StatusReply], counter: str) -> int:
    return sum(r.counters[counter] for r in status.values())


def snr_notif_messages(scot: topology.Scot, wl: Workload, pubs: list[tuple[str, str, dict]]) -> int:
    """The inter-broker notification messages SNR needs for ``pubs``, from the simulator."""
    net = SimNetwork(scot, "snr")
    for sid, host, flt in wl.subs:
        net.subscribe(sid, host, flt)
    return sum(net.publish(pid, host, attrs) for pid, host, attrs in pubs)


async def wait_received(streams: list[SubscriptionStream], n: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(len(s.received) for s in streams) < n and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


async def random_workload(cluster: LocalCluster, scot: topology.Scot, wl: Workload, sequential: int) -> None:
    """Subscribe, publish (the first ``sequential`` one by one, the rest at once), unsubscribe; check all."""
    addrs = cluster.addresses()
    clients = {b: BrokerClient(a) for b, a in addrs.items()}
    subs = len(wl.subs)
    try:
        before = await wait_quiescent(addrs, timeout_s=60)
        streams = [await clients[host].subscribe(sid, flt, "test") for sid, host, flt in wl.subs]
        after_subs = await wait_quiescent(addrs, timeout_s=60)
        assert total(after_subs, "sub_out") - total(before, "sub_out") == PER_SUB[scot] * subs
        assert total(after_subs, "sub_in") - total(before, "sub_in") == PER_SUB[scot] * subs
        tables = await tables_all(addrs)
        assert sum(len(t.entries) for t in tables.values()) == len(scot.brokers) * subs

        # one at a time nothing queues, so DNR routes exactly as SNR does
        for pid, host, attrs in wl.pubs[:sequential]:
            await clients[host].publish([(pid, dict(attrs))], "test")  # type: ignore[arg-type]
            await wait_quiescent(addrs, timeout_s=60, stable_s=0.05)
        after_seq = await wait_quiescent(addrs, timeout_s=60)
        assert total(after_seq, "notif_out") - total(after_subs, "notif_out") == snr_notif_messages(
            scot, wl, wl.pubs[:sequential]
        )
        # the rest at once from every host: output queues fill, DNR re-routes where its LST says so
        by_host: dict[str, list[tuple[str, dict]]] = {}
        for pid, host, attrs in wl.pubs[sequential:]:
            by_host.setdefault(host, []).append((pid, attrs))
        await asyncio.gather(*(clients[h].publish(ps, "test") for h, ps in by_host.items()))
        after_pubs = await wait_quiescent(addrs, timeout_s=60)
        await wait_received(streams, total(after_pubs, "deliver") - total(before, "deliver"))
        got = Counter((d.notification.pub_id, s.sub_id) for s in streams for d in s.received)
        assert set(got) == wl.expected(), "missing or false-positive deliveries"
        assert set(got.values()) == {1}, "duplicate deliveries"

        await asyncio.gather(*(s.close() for s in streams))  # stream end = unsubscription
        after_unsubs = await wait_quiescent(addrs, timeout_s=60)
        assert total(after_unsubs, "unsub_out") - total(after_pubs, "unsub_out") == PER_SUB[scot] * subs
        assert all(len(t.entries) == 0 for t in (await tables_all(addrs)).values())
    finally:
        await asyncio.gather(*(c.close() for c in clients.values()))


def test_snr_fig2_k3_counts_and_exactly_once(tmp_path: Path) -> None:
    wl = make_workload([b.id for b in FIG2_K3.brokers], n_subs=24, n_pubs=40, seed=11)
    with start(FIG2_K3, tmp_path, "snr") as cluster:
        asyncio.run(random_workload(cluster, FIG2_K3, wl, sequential=5))


def test_dnr_fig8_k5_75_processes_counts_and_exactly_once(tmp_path: Path) -> None:
    wl = make_workload([b.id for b in FIG8_K5.brokers], n_subs=10, n_pubs=30, seed=12)
    with start(FIG8_K5, tmp_path, "dnr") as cluster:
        asyncio.run(random_workload(cluster, FIG8_K5, wl, sequential=4))


# --- DNR on paper-fig2 × K3: one cluster for the random workload and the three cases ---------


@pytest.fixture(scope="module")
def dnr_fig2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with start(FIG2_K3, tmp_path_factory.mktemp("dnr-fig2"), "dnr") as cluster:
        yield cluster


def test_dnr_fig2_k3_counts_and_exactly_once(dnr_fig2: LocalCluster) -> None:
    wl = make_workload([b.id for b in FIG2_K3.brokers], n_subs=24, n_pubs=40, seed=13)
    asyncio.run(random_workload(dnr_fig2, FIG2_K3, wl, sequential=5))


#: Fig. 7: the publisher at B(b,2); S1 at B(c,0), S2 at B(c,1), S3 at B(a,2), S4 at B(c,2); S5 at
#: B(b,1) only absorbs a warm-up. Subscriber k takes notifications with ``wk = 1``, so a warm-up can
#: target one of them; ALL (the notification under test) reaches S1-S4.
FIG7 = {"s1": "b-c-0", "s2": "b-c-1", "s3": "b-a-2", "s4": "b-c-2", "s5": "b-b-1"}
ALL = {"w1": 1, "w2": 1, "w3": 1, "w4": 1}


def only_n(n: str, **more: Counter[str]) -> dict[str, Counter[str]]:
    """What each subscriber must have received: ``n`` once for S1-S4, plus ``more``."""
    out = {s: Counter({n: 1}) for s in FIG7 if s != "s5"}
    out["s5"] = Counter()
    return {**out, **more}


ICOL, ACOL = "iCOL", "aCOL"


class Fig7:
    """Drives one case on the shared cluster; ``tag`` keeps its ids apart from the other cases'."""

    def __init__(self, cluster: LocalCluster, tag: str) -> None:
        self.cluster = cluster
        self.tag = tag
        self.addrs = cluster.addresses()
        self.clients = {b: BrokerClient(a) for b, a in self.addrs.items()}
        self.streams: dict[str, SubscriptionStream] = {}
        self.throttled: set[tuple[str, str]] = set()

    async def subscribe(self) -> None:
        await wait_quiescent(self.addrs, timeout_s=60)
        for k, (sub, host) in enumerate(FIG7.items(), 1):
            self.streams[sub] = await self.clients[host].subscribe(f"{self.tag}-{sub}", f"w{k} = 1")
        await wait_quiescent(self.addrs, timeout_s=60)

    async def throttle(self, *links: tuple[str, str]) -> None:
        for src, dst in links:
            await self.clients[src].set_link_capacity(NEAR_ZERO, dst)
            self.throttled.add((src, dst))

    async def restore(self, *links: tuple[str, str]) -> None:
        for src, dst in links or tuple(self.throttled):
            await self.clients[src].set_link_capacity(0.0, dst)
            self.throttled.discard((src, dst))

    async def publish(self, pid: str, host: str, attrs: dict[str, int]) -> str:
        pub_id = f"{self.tag}-{pid}"
        await self.clients[host].publish([(pub_id, attrs)], "test")
        return pub_id

    async def queues(self) -> dict[tuple[str, str], int]:
        status = await status_all(self.addrs)
        return {(b, link.neighbour): link.output_len for b, r in status.items() for link in r.links}

    async def settle(self, parked: Mapping[tuple[str, str], int], timeout_s: float = 30.0) -> None:
        """Wait until every queue but the throttled ones is empty and the throttled ones hold ``parked``."""
        deadline = time.monotonic() + timeout_s
        stable = 0
        while True:
            status = await status_all(self.addrs)
            idle = all(
                r.input_len == 0
                and all(
                    (link.output_len == parked.get((b, link.neighbour), 0))
                    and (link.unacked == 0 or (b, link.neighbour) in self.throttled)
                    for link in r.links
                )
                for b, r in status.items()
            )
            stable = stable + 1 if idle else 0
            if stable >= 3:
                await asyncio.sleep(WINDOWS)
                return
            if time.monotonic() > deadline:
                got = {k: v for k, v in (await self.queues()).items() if v}
                raise TimeoutError(f"queues did not settle to {dict(parked)}: {got}")
            await asyncio.sleep(0.05)

    async def path(self, pub_id: str) -> set[tuple[str, str, bool]]:
        """(from, to, dynamic) of every inter-broker copy of ``pub_id``, from the event logs."""
        await flush_all(self.addrs)
        out = []
        for b in self.addrs:
            for e in read_events(self.cluster.event_log(b)):
                if e["ev"] == "notif_out" and e["pub_id"] == pub_id:
                    out.append((b, e["link"], bool(e["dynamic"])))
        assert len(out) == len(set(out)), f"a link carried {pub_id} twice: {out}"
        return set(out)

    def received(self) -> dict[str, Counter[str]]:
        return {s: Counter(stream.pub_ids()) for s, stream in self.streams.items()}

    async def close(self) -> None:
        await self.restore()
        await asyncio.gather(*(s.close() for s in self.streams.values()))
        await wait_quiescent(self.addrs, timeout_s=60)
        await asyncio.gather(*(c.close() for c in self.clients.values()))


def case_taken(marked_to: str, kinds: Mapping[str, str], overloaded: set[str]) -> str:
    """The DNR case a host decision was, read off where its marked copy went."""
    if kinds[marked_to] == ACOL:
        return "II"
    return "III" if marked_to in overloaded else "I"


def neighbour_kinds(cluster: LocalCluster, broker: str) -> dict[str, str]:
    cfg = next(c for c in cluster.configs if c.id == broker)
    return {n.id: n.kind for n in cfg.neighbours}


def host_marked_copy(path: set[tuple[str, str, bool]], host: str) -> str:
    (hop,) = [dst for src, dst, dyn in path if src == host and dyn]
    return hop


def test_dnr_case_1_fig7b(dnr_fig2: LocalCluster) -> None:
    async def scenario() -> None:
        f = Fig7(dnr_fig2, "c1")
        try:
            await f.subscribe()
            await f.throttle(("b-b-2", "b-b-0"))
            w = await f.publish("w", "b-b-2", {"w1": 1})  # parks in B(b,2) → B(b,0)
            await f.settle({("b-b-2", "b-b-0"): 1})
            n = await f.publish("n", "b-b-2", ALL)
            await f.settle({("b-b-2", "b-b-0"): 1})  # the congested queue got no copy of n
            path = await f.path(n)
            assert path == {
                ("b-b-2", "b-a-2", False),
                ("b-b-2", "b-c-2", False),
                ("b-b-2", "b-b-1", True),  # the marked copy, C0 in its CBV
                ("b-b-1", "b-b-0", True),  # B(b,1) serves C0 and drops the header
                ("b-b-1", "b-c-1", False),
                ("b-b-0", "b-c-0", False),
            }
            kinds = neighbour_kinds(dnr_fig2, "b-b-2")
            assert case_taken(host_marked_copy(path, "b-b-2"), kinds, {"b-b-0"}) == "I"
            assert f.received() == only_n(n)
            await f.restore()
            await wait_quiescent(f.addrs, timeout_s=60)
            await wait_received(list(f.streams.values()), 5)
            assert f.received() == only_n(n, s1=Counter({n: 1, w: 1}))
        finally:
            await f.close()

    asyncio.run(scenario())


def test_dnr_case_2_fig7c(dnr_fig2: LocalCluster) -> None:
    async def scenario() -> None:
        f = Fig7(dnr_fig2, "c2")
        try:
            await f.subscribe()
            await f.throttle(("b-b-2", "b-b-0"), ("b-b-2", "b-b-1"))
            w1 = await f.publish("w1", "b-b-2", {"w1": 1})
            await f.settle({("b-b-2", "b-b-0"): 1})
            w2 = await f.publish("w2", "b-b-2", {"w2": 1})
            parked = {("b-b-2", "b-b-0"): 1, ("b-b-2", "b-b-1"): 1}
            await f.settle(parked)
            n = await f.publish("n", "b-b-2", ALL)
            await f.settle(parked)  # neither congested iCOL got a copy of n
            path = await f.path(n)
            # both free target aCOLs have CE 0: the tie goes to the lower id, B(a,2)
            assert path == {
                ("b-b-2", "b-a-2", True),  # the marked copy, C0 and C1 in its CBV
                ("b-b-2", "b-c-2", False),
                ("b-a-2", "b-a-0", True),  # B(a,2) serves both TSCs over its free iCOLs
                ("b-a-2", "b-a-1", True),
                ("b-a-0", "b-b-0", False),  # each TSC's own tree takes it from there
                ("b-b-0", "b-c-0", False),
                ("b-a-1", "b-b-1", False),
                ("b-b-1", "b-c-1", False),
            }
            kinds = neighbour_kinds(dnr_fig2, "b-b-2")
            assert case_taken(host_marked_copy(path, "b-b-2"), kinds, {"b-b-0", "b-b-1"}) == "II"
            assert f.received() == only_n(n)
            await f.restore()
            await wait_quiescent(f.addrs, timeout_s=60)
            await wait_received(list(f.streams.values()), 6)
            assert f.received() == only_n(n, s1=Counter({n: 1, w1: 1}), s2=Counter({n: 1, w2: 1}))
        finally:
            await f.close()

    asyncio.run(scenario())


def test_dnr_case_3_fig7d(dnr_fig2: LocalCluster) -> None:
    async def scenario() -> None:
        f = Fig7(dnr_fig2, "c3")
        try:
            await f.subscribe()
            host_links = [("b-b-2", d) for d in ("b-a-2", "b-c-2", "b-b-0", "b-b-1")]
            await f.throttle(*host_links, ("b-b-1", "b-b-0"), ("b-c-1", "b-c-0"))
            # park one envelope in each throttled queue, each with a warm-up that takes only that link
            parked: dict[tuple[str, str], int] = {}
            warm = {}
            for pid, host, link, attrs in [
                ("wb", "b-b-1", ("b-b-1", "b-b-0"), {"w1": 1}),
                ("wc", "b-c-1", ("b-c-1", "b-c-0"), {"w1": 1}),
                ("w3", "b-b-2", ("b-b-2", "b-a-2"), {"w3": 1}),
                ("w4", "b-b-2", ("b-b-2", "b-c-2"), {"w4": 1}),
                ("w1", "b-b-2", ("b-b-2", "b-b-0"), {"w1": 1}),
                ("w5", "b-b-2", ("b-b-2", "b-b-1"), {"w5": 1}),  # S5 at B(b,1): nothing goes further
                ("w0", "b-b-2", ("b-b-2", "b-b-0"), {"w1": 1}),  # already case III: its only target link
            ]:
                warm[pid] = await f.publish(pid, host, attrs)
                parked[link] = parked.get(link, 0) + 1
                await f.settle(parked)

            n = await f.publish("n", "b-b-2", ALL)
            parked.update({("b-b-2", "b-a-2"): 2, ("b-b-2", "b-c-2"): 2, ("b-b-2", "b-b-1"): 2})
            await f.settle(parked)  # B(b,2) → B(b,0), the more loaded iCOL, got no copy of n
            # let n (behind the warm-up) through to B(b,1) only; B(b,1) → B(b,0) and B(c,1) → B(c,0) stay
            await f.restore(("b-b-2", "b-b-1"))
            parked[("b-b-2", "b-b-1")] = 0
            parked[("b-c-1", "b-c-0")] = 2
            await f.settle(parked)  # B(b,1) → B(b,0) kept its one envelope: no extra copy
            await f.restore()
            await wait_quiescent(f.addrs, timeout_s=60)
            path = await f.path(n)
            assert path == {
                ("b-b-2", "b-a-2", False),  # one copy each into the congested aCOL queues, as SNR
                ("b-b-2", "b-c-2", False),
                ("b-b-2", "b-b-1", True),  # the least overloaded target iCOL: serves C1, carries C0
                ("b-b-1", "b-c-1", True),  # case II at B(b,1): its iCOL to C0 is congested
                ("b-c-1", "b-c-0", True),  # case III at B(c,1): the only way into C0
            }
            kinds = neighbour_kinds(dnr_fig2, "b-b-2")
            overloaded = {d for _, d in host_links}
            assert case_taken(host_marked_copy(path, "b-b-2"), kinds, overloaded) == "III"
            await wait_received(list(f.streams.values()), 11)
            assert f.received() == only_n(
                n,
                s1=Counter({n: 1, **{warm[w]: 1 for w in ("wb", "wc", "w1", "w0")}}),
                s3=Counter({n: 1, warm["w3"]: 1}),
                s4=Counter({n: 1, warm["w4"]: 1}),
                s5=Counter({warm["w5"]: 1}),
            )
        finally:
            await f.close()

    asyncio.run(scenario())
