"""SCOT and tree overlays: the paper counts, the product's structure, factor readers, placement."""

from __future__ import annotations

import json
import typing
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scotbed import topology as topo
from scotbed.experiment.spec import NamedFactor


@pytest.mark.parametrize(
    ("factor", "m", "counts"),
    [
        (topo.paper_fig2(), 3, (18, 3, 6, 15, 18)),
        (topo.paper_fig8(), 5, (75, 5, 15, 70, 150)),
    ],
)
def test_paper_counts(factor: topo.AcyclicFactor, m: int, counts: tuple[int, ...]) -> None:
    s = topo.Scot(factor, m).summary()
    assert (s["brokers"], s["clusters"], s["regions"], s["acols"], s["icols"]) == counts


def test_paper_fig8_shape() -> None:
    f = topo.paper_fig8()
    types = Counter(f.vertex_type(v) for v in f.vertices)
    assert types == {"inner": 5, "edge": 10}
    assert f.diameter() == 6  # leaf, 5 inner on a chain, leaf


def test_paper_fig2_is_the_path_a_to_f() -> None:
    s = topo.Scot(topo.paper_fig2(), 3)
    assert {n.id for n in s.neighbours("b-b-0") if n.kind == topo.ACOL} == {"b-a-0", "b-c-0"}
    assert [b.type for b in s.brokers[:6]] == ["edge", "inner", "inner", "inner", "inner", "edge"]
    assert s.diameter() == 6


_SLOW_OK = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SLOW_OK
@given(n=st.integers(1, 25), seed=st.integers(0, 10**6), m=st.integers(1, 5))
def test_product_properties(n: int, seed: int, m: int) -> None:
    factor = topo.random_tree(n, seed)
    scot = topo.Scot(factor, m)
    # the count formulas
    assert len(scot.brokers) == n * m
    assert len(scot.acols()) == (n - 1) * m
    assert len(scot.icols()) == n * m * (m - 1) // 2
    assert len(scot.clusters()) == m and len(scot.regions()) == n
    g = nx.Graph([(link.a, link.b) for link in scot.links])
    g.add_nodes_from(b.id for b in scot.brokers)
    # it is the Cartesian product G_A □ K_m, broker b-<a>-<i> being the vertex (a, i)
    ga = nx.Graph(list(factor.edges))
    ga.add_nodes_from(factor.vertices)
    product = nx.cartesian_product(ga, nx.complete_graph(m))
    coords = {b.id: (b.vertex, b.index) for b in scot.brokers}
    assert {frozenset((coords[x], coords[y])) for x, y in g.edges} == {frozenset(e) for e in product.edges}
    assert set(coords.values()) == set(product.nodes)
    assert scot.diameter() == (nx.diameter(g) if n * m > 1 else 0)
    # each cluster a tree over aCOLs, each region a clique over iCOLs
    for i, members in scot.clusters().items():
        sub = g.subgraph(members)
        assert nx.is_tree(sub), f"cluster {i}"
        assert all(scot.by_id[b].index == i for b in members)
        assert all(link.kind == topo.ACOL for link in scot.links if {link.a, link.b} <= set(members))
    for a, members in scot.regions().items():
        sub = g.subgraph(members)
        assert sub.number_of_edges() == m * (m - 1) // 2, f"region {a}"
        assert all(link.kind == topo.ICOL for link in scot.links if {link.a, link.b} <= set(members))
    # edge brokers have at most one aCOL neighbour, inner brokers at least two
    for b in scot.brokers:
        primaries = [x for x in scot.neighbours(b.id) if x.kind == topo.ACOL]
        secondaries = [x for x in scot.neighbours(b.id) if x.kind == topo.ICOL]
        assert (b.type == "edge") == (len(primaries) <= 1)
        assert len(secondaries) == m - 1
        assert all(x.cluster == b.cluster for x in primaries)
        assert all(x.region == b.region for x in secondaries)


@_SLOW_OK
@given(fanout=st.integers(1, 4), depth=st.integers(0, 3))
def test_kary_counts(fanout: int, depth: int) -> None:
    f = topo.kary(fanout, depth)
    assert len(f.vertices) == sum(fanout**d for d in range(depth + 1))
    assert f.diameter() == (depth if fanout == 1 else 2 * depth)


def test_path_and_star() -> None:
    assert topo.path(5).diameter() == 4
    star = topo.star(6)
    assert [star.vertex_type(v) for v in star.vertices] == ["inner"] + ["edge"] * 5
    assert topo.star(2).diameter() == 1


def test_random_tree_is_reproducible() -> None:
    assert topo.random_tree(12, 3) == topo.random_tree(12, 3)
    assert topo.random_tree(12, 3).edges != topo.random_tree(12, 4).edges


def test_cycle_is_named() -> None:
    with pytest.raises(topo.TopologyError, match=r"not a tree: cycle a - b - c - a|cycle .*a.*b.*c"):
        topo.from_edge_list("a b\nb c\nc a\n", name="tri")


def test_disconnected_parts_are_named() -> None:
    with pytest.raises(topo.TopologyError, match=r"not connected: 2 parts: \{a, b\}; \{c, d\}"):
        topo.from_edge_list("a b\nc d\n", name="two")


def test_edge_list_reader() -> None:
    f = topo.from_edge_list("# a star\nhub x\nhub,y  # comma form\nhub z\n", name="mine")
    assert f.vertices == ("hub", "x", "y", "z")
    assert f.vertex_type("hub") == "inner"
    with pytest.raises(topo.TopologyError, match="mine:2"):
        topo.from_edge_list("a b\na b c\n", name="mine")


GRAPHML = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <graph id="G" edgedefault="undirected">
    <node id="n0"/><node id="n1"/><node id="n2"/><node id="n3"/>
    <edge source="n0" target="n1"/><edge source="n1" target="n2"/><edge source="n1" target="n3"/>
  </graph>
</graphml>
"""


def test_graphml_reader() -> None:
    f = topo.from_graphml(GRAPHML, name="g")
    assert f.vertices == ("n0", "n1", "n2", "n3")
    assert topo.Scot(f, 2).summary()["brokers"] == 8
    with pytest.raises(topo.TopologyError, match="not valid GraphML"):
        topo.from_graphml("<graphml", name="bad")


def test_graphml_from_networkx() -> None:
    text = "\n".join(nx.generate_graphml(nx.relabel_nodes(nx.balanced_tree(2, 2), lambda k: f"v{k}")))
    f = topo.from_graphml(text)
    assert len(f.vertices) == 7 and f.diameter() == 4


def test_scot_json_round_trip() -> None:
    s = topo.Scot(topo.paper_fig8(), 3)
    again = topo.Scot.from_json(s.to_json())
    assert again.links == s.links and again.brokers == s.brokers


def test_chromatic_need_colours_the_product() -> None:
    s = topo.Scot(topo.paper_fig2(), 3)
    need = s.chromatic_need()
    g = nx.Graph([(link.a, link.b) for link in s.links])
    assert need == 3
    assert max(nx.greedy_color(g, strategy="DSATUR").values()) + 1 == need
    assert topo.Scot(topo.path(1), 1).chromatic_need() == 1


SCOT = topo.Scot(topo.paper_fig8(), 3)
CLIENTS = [f"c{k}" for k in range(60)]


def test_placement_random_is_seeded() -> None:
    a = topo.placement(SCOT, CLIENTS, "random", seed=1)
    assert a == topo.placement(SCOT, CLIENTS, "random", seed=1)
    assert a != topo.placement(SCOT, CLIENTS, "random", seed=2)
    assert set(a) == set(CLIENTS) and set(a.values()) <= set(SCOT.by_id)


def test_placement_edge_uses_edge_brokers_only() -> None:
    a = topo.placement(SCOT, CLIENTS, "edge", seed=1)
    assert {SCOT.by_id[b].type for b in a.values()} == {"edge"}


def test_placement_per_cluster_round_robin() -> None:
    a = topo.placement(SCOT, CLIENTS, "per-cluster", seed=1)
    assert Counter(SCOT.by_id[b].cluster for b in a.values()) == {0: 20, 1: 20, 2: 20}
    only = topo.placement(SCOT, CLIENTS, "per-cluster", seed=1, clusters=[2])
    assert {SCOT.by_id[b].cluster for b in only.values()} == {2}
    with pytest.raises(topo.TopologyError, match="cluster 7 does not exist"):
        topo.placement(SCOT, CLIENTS, "per-cluster", seed=1, clusters=[7])


def test_placement_explicit() -> None:
    mapping = dict(zip(CLIENTS[:2], ["b-i0-0", "b-l41-2"], strict=True))
    assert topo.placement(SCOT, CLIENTS[:2], "explicit", seed=0, explicit=mapping) == mapping
    with pytest.raises(topo.TopologyError, match="no broker for client 'c2'"):
        topo.placement(SCOT, CLIENTS[:3], "explicit", seed=0, explicit=mapping)
    with pytest.raises(topo.TopologyError, match="unknown broker 'b-zz-0'"):
        topo.placement(SCOT, ["c0"], "explicit", seed=0, explicit={"c0": "b-zz-0"})


def test_links_are_unique_and_kinds_match_coordinates() -> None:
    s = topo.Scot(topo.kary(3, 2), 4)
    pairs = [frozenset((link.a, link.b)) for link in s.links]
    assert len(pairs) == len(set(pairs))
    for link in s.links:
        a, b = s.by_id[link.a], s.by_id[link.b]
        assert (link.kind == topo.ICOL) == (a.vertex == b.vertex)
        assert (link.kind == topo.ACOL) == (a.index == b.index)
    assert all(link.a != link.b for link in s.links)


@pytest.mark.parametrize("factor", [topo.paper_fig2(), topo.paper_fig8(), topo.kary(3, 2), topo.star(5)])
def test_drawing_layout_puts_clusters_in_rows_and_regions_in_columns(factor: topo.AcyclicFactor) -> None:
    from scotbed.analysis.plots_topology import column_order, layout

    scot = topo.Scot(factor, 3)
    pos = layout(scot)
    assert sorted(column_order(factor)) == sorted(factor.vertices)
    for i, members in scot.clusters().items():
        assert {pos[b][1] for b in members} == {-i}
    for members in scot.regions().values():
        assert len({pos[b][0] for b in members}) == 1
    assert len(set(pos.values())) == len(scot.brokers)
    if factor.name == "paper-fig2":  # a path is drawn in order, every aCOL between adjacent columns
        assert column_order(factor) == list("abcdef")


def test_the_selective_pruning_tiered_topologies() -> None:
    big, small = topo.paper_tiered(), topo.paper_tiered_small()
    assert Counter(big.vertex_type(v) for v in big.vertices) == {"inner": 23, "edge": 32}
    assert Counter(small.vertex_type(v) for v in small.vertices) == {"inner": 9, "edge": 10}
    for f in (big, small):
        assert [v for v in topo.TIERED_CORE if f.vertex_type(v) == "inner"] == list(topo.TIERED_CORE)
        pubs = [v for v in f.vertices if v.startswith("p")]
        assert all(set(e) == {"e", p} for p in pubs for e in f.edges if p in e)  # publishers hang on E
    assert big.diameter() == 8  # s – n – a – b – c – d – e – n – s
    assert set(typing.get_args(NamedFactor.model_fields["kind"].annotation)) == set(topo.NAMED_FACTORS)


@pytest.mark.parametrize("spec", ["quickstart.yaml", "octopis-static.yaml"])
def test_the_report_draws_the_scot_topology_json_describes(spec: str) -> None:
    """A run's topology.json gives back the same SCOT, so the report and `topology --draw` draw alike."""
    from scotbed.analysis.plots_topology import scot_of
    from scotbed.experiment.spec import build_scot, load_spec

    scot = build_scot(load_spec(Path(__file__).resolve().parents[1] / "experiments" / spec))
    again = scot_of(json.loads(json.dumps(scot.to_json())))
    assert again is not None
    assert again.brokers == scot.brokers and again.links == scot.links
    assert scot_of({"kind": "peers", "n": 5}) is None
