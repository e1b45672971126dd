"""Link matching in the simulator: rpf's links on trees, exactly-once on SCOTs, exact spanning-tree links."""

from __future__ import annotations

import itertools

import pytest
from broker_workload import make_workload

from scotbed import topology
from scotbed.broker.sim import SimNetwork
from scotbed.messages import Publication, Subscription
from scotbed.routing.link_matching import cluster_of

FIG2_K3 = topology.Scot(topology.paper_fig2(), 3)
FIG8_K5 = topology.Scot(topology.paper_fig8(), 5)


def _links_per_publication(net: SimNetwork) -> dict[str, set[tuple[str, str]]]:
    out: dict[str, set[tuple[str, str]]] = {}
    for s in net.sent:
        if isinstance(s.msg, Publication):
            out.setdefault(s.msg.pub_id, set()).add((s.src, s.dst))
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("matching", ["counting", "pst"])
def test_on_random_trees_link_matching_sends_on_rpf_links(seed: int, matching: str) -> None:
    scot = topology.tree(topology.random_tree(4 + 3 * seed, seed))
    brokers = [b.id for b in scot.brokers]
    wl = make_workload(brokers, n_subs=30, n_pubs=50, seed=seed)
    lm, rpf = SimNetwork(scot, "link-matching", matching=matching), SimNetwork(scot, "rpf")
    for sub_id, host, flt in wl.subs:
        assert lm.subscribe(sub_id, host, flt) == rpf.subscribe(sub_id, host, flt) == len(brokers) - 1
    for pub_id, host, attrs in wl.pubs:
        lm.publish(pub_id, host, attrs)
        rpf.publish(pub_id, host, attrs)
    assert _links_per_publication(lm) == _links_per_publication(rpf)
    wl.assert_delivered_exactly_once(lm)
    for sub_id, _, _ in wl.subs[::2]:
        lm.unsubscribe(sub_id)
    assert sum(lm.table_sizes().values()) == len(brokers) * (len(wl.subs) - len(wl.subs[::2]))


def _spanning_tree_path(scot: topology.Scot, phb: str, host: str) -> list[tuple[str, str]]:
    """The tie-broken shortest path: the iCOL hop first (at the PHB's region), then the cluster's tree."""
    p, i = phb.rsplit("-", 1)[0][2:], cluster_of(phb)
    u, j = host.rsplit("-", 1)[0][2:], cluster_of(host)
    adj = scot.factor.adjacency
    parent: dict[str, str | None] = {p: None}
    frontier = [p]
    while frontier:
        nxt = []
        for v in frontier:
            for w in adj[v]:
                if w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    vertices = [u]
    while parent[vertices[-1]] is not None:
        vertices.append(parent[vertices[-1]])  # type: ignore[arg-type]
    vertices.reverse()
    hops = [topology.broker_id(v, j) for v in vertices]
    if i != j:
        hops.insert(0, phb)
    return list(itertools.pairwise(hops))


@pytest.mark.parametrize("scot", [FIG2_K3, FIG8_K5], ids=["fig2xK3", "fig8xK5"])
def test_on_a_scot_delivery_is_exactly_once_over_the_publishers_spanning_tree(scot: topology.Scot) -> None:
    brokers = [b.id for b in scot.brokers]
    wl = make_workload(brokers, n_subs=40, n_pubs=60, seed=len(brokers))
    net = SimNetwork(scot, "link-matching", matching="pst")
    for sub_id, host, flt in wl.subs:
        assert net.subscribe(sub_id, host, flt) == len(brokers) - 1
    subs = [s for s in net.sent if isinstance(s.msg, Subscription)]
    assert len({(s.dst, s.msg.sub_id) for s in subs}) == len(subs)  # every broker got each once
    for pub_id, host, attrs in wl.pubs:
        net.publish(pub_id, host, attrs)
    wl.assert_delivered_exactly_once(net)
    sent = _links_per_publication(net)
    for pub_id, phb, attrs in wl.pubs:
        want = {e for s, h, f in wl.subs if f.matches(attrs) for e in _spanning_tree_path(scot, phb, h)}
        assert sent.get(pub_id, set()) == want, pub_id
    for sub_id, _, _ in wl.subs:
        assert net.unsubscribe(sub_id) == len(brokers) - 1
    assert set(net.table_sizes().values()) == {0}


def test_publication_decisions_report_matching_steps() -> None:
    scot = topology.tree(topology.path(3))
    net = SimNetwork(scot, "link-matching")
    net.subscribe("s1", "b-v2-0", 'symbol = "IBM" and price > 5')
    algo = net.brokers["b-v0-0"]
    d = algo.on_publication(Publication("p", "x", {"symbol": "IBM", "price": 6}), None)
    assert [f.hop for f in d.forwards] == ["b-v1-0"] and d.deliver == []
    assert d.steps is not None and d.steps >= 1 and algo.match_steps(d) == d.steps
    d = algo.on_publication(Publication("q", "x", {"symbol": "IBM", "price": 5}), None)
    assert d.forwards == [] and d.deliver == []
