"""SCOT and tree overlays as pure data (docs/design.md §2).

A SCOT is the Cartesian product G_A □ K_m of an acyclic factor G_A (a tree)
and the complete graph K_m. Broker B(a, i) has a ∈ V(G_A) and i ∈ {0..m-1}
(index property: the K_m labels are 0..m-1; label order property: the G_A
label comes first). Cluster C_i is the G_A-fibre of index i, region R_a the
K_m-fibre of vertex a. Links inside a cluster are aCOLs, links inside a
region are iCOLs.
A broker is an *edge* broker when it has at most one aCOL neighbour and an
*inner* broker otherwise. m = 1 is the plain tree.

Nothing here does I/O except the two file readers, which take text.
"""

from __future__ import annotations

import itertools
import random
import re
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from scotbed.errors import UserError

ACOL: Literal["aCOL"] = "aCOL"
ICOL: Literal["iCOL"] = "iCOL"
LinkKind = Literal["aCOL", "iCOL"]
BrokerType = Literal["edge", "inner"]

_VERTEX_NAME = re.compile(r"^[a-z0-9]([a-z0-9]{0,30})?$")


class TopologyError(UserError):
    """An overlay that cannot be built; the message names the vertex, edge or cycle at fault."""


@dataclass(frozen=True)
class AcyclicFactor:
    """The tree G_A. Vertex names become part of broker ids and DNS names."""

    name: str
    vertices: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        self._check_names()
        self._check_tree()

    def _check_names(self) -> None:
        seen: set[str] = set()
        for v in self.vertices:
            if not _VERTEX_NAME.match(v):
                raise TopologyError(
                    f"acyclic factor {self.name!r}: vertex name {v!r} must be 1-31 lowercase "
                    "letters or digits (it becomes part of broker ids and DNS names)"
                )
            if v in seen:
                raise TopologyError(f"acyclic factor {self.name!r}: vertex {v!r} appears twice")
            seen.add(v)
        if not self.vertices:
            raise TopologyError(f"acyclic factor {self.name!r} has no vertices")
        pairs: set[frozenset[str]] = set()
        for u, v in self.edges:
            for x in (u, v):
                if x not in seen:
                    raise TopologyError(
                        f"acyclic factor {self.name!r}: edge ({u}, {v}) names unknown vertex {x!r}"
                    )
            if u == v:
                raise TopologyError(f"acyclic factor {self.name!r}: self-loop at {u!r} is a cycle")
            key = frozenset((u, v))
            if key in pairs:
                raise TopologyError(
                    f"acyclic factor {self.name!r}: edge ({u}, {v}) appears twice (a cycle of length 2)"
                )
            pairs.add(key)

    def _check_tree(self) -> None:
        adj: dict[str, list[str]] = {v: [] for v in self.vertices}
        parent: dict[str, str | None] = {}
        for u, v in self.edges:
            adj[u].append(v)
            adj[v].append(u)
        components: list[list[str]] = []
        for root in self.vertices:
            if root in parent:
                continue
            comp = [root]
            parent[root] = None
            stack = [root]
            while stack:
                x = stack.pop()
                for y in adj[x]:
                    if y == parent[x]:
                        continue
                    if y in parent:
                        raise TopologyError(
                            f"acyclic factor {self.name!r} is not a tree: cycle "
                            + " - ".join(_cycle(parent, x, y))
                        )
                    parent[y] = x
                    comp.append(y)
                    stack.append(y)
            components.append(comp)
        if len(components) > 1:
            parts = "; ".join("{" + ", ".join(sorted(c)) + "}" for c in components)
            raise TopologyError(
                f"acyclic factor {self.name!r} is not connected: {len(components)} parts: {parts}"
            )

    @cached_property
    def adjacency(self) -> dict[str, tuple[str, ...]]:
        adj: dict[str, list[str]] = {v: [] for v in self.vertices}
        for u, v in self.edges:
            adj[u].append(v)
            adj[v].append(u)
        return {v: tuple(sorted(n, key=self.vertices.index)) for v, n in adj.items()}

    def degree(self, v: str) -> int:
        return len(self.adjacency[v])

    def vertex_type(self, v: str) -> BrokerType:
        return "edge" if self.degree(v) <= 1 else "inner"

    def distances(self, src: str) -> dict[str, int]:
        """Hop distance in the tree from ``src`` to every vertex."""
        return _bfs(self.adjacency, src)

    def diameter(self) -> int:
        if len(self.vertices) == 1:
            return 0
        far, _ = _bfs_far(self.adjacency, self.vertices[0])
        _, d = _bfs_far(self.adjacency, far)
        return d


def _cycle(parent: dict[str, str | None], x: str, y: str) -> list[str]:
    """The cycle closed by edge x–y in a DFS forest given by ``parent``."""
    path_x = [x]
    while (p := parent[path_x[-1]]) is not None:
        path_x.append(p)
    path_y = [y]
    while path_y[-1] not in path_x and (p := parent[path_y[-1]]) is not None:
        path_y.append(p)
    meet = path_y[-1]
    cyc = path_x[: path_x.index(meet) + 1] + list(reversed(path_y[:-1]))
    return [*cyc, x]


def _bfs(adj: Mapping[str, Sequence[str]], src: str) -> dict[str, int]:
    """Hop distance from ``src`` to every vertex it reaches."""
    dist = {src: 0}
    q = deque([src])
    while q:
        x = q.popleft()
        for y in adj[x]:
            if y not in dist:
                dist[y] = dist[x] + 1
                q.append(y)
    return dist


def _bfs_far(adj: Mapping[str, Sequence[str]], src: str) -> tuple[str, int]:
    dist = _bfs(adj, src)
    far = max(dist, key=lambda v: dist[v])
    return far, dist[far]


# --- named and generated acyclic factors ---------------------------------------------------


def paper_fig2() -> AcyclicFactor:
    """OctopiS Fig. 2 read as the path a–b–c–d–e–f (docs/design.md §2)."""
    vs = tuple("abcdef")
    return AcyclicFactor("paper-fig2", vs, tuple(itertools.pairwise(vs)))


def paper_fig8() -> AcyclicFactor:
    """OctopiS Fig. 8: a chain of 5 inner vertices, each with 2 leaves (15 vertices)."""
    inner = [f"i{k}" for k in range(5)]
    edges = list(itertools.pairwise(inner))
    leaves = []
    for k, v in enumerate(inner):
        for j in range(2):
            leaf = f"l{k}{j}"
            leaves.append(leaf)
            edges.append((v, leaf))
    return AcyclicFactor("paper-fig8", tuple(inner + leaves), tuple(edges))


#: the core brokers A–E of the selective-pruning paper's tiered topologies, in chain order
TIERED_CORE = ("a", "b", "c", "d", "e")


def tiered(
    name: str, inner_per_core: Sequence[int], edges_per_inner: Sequence[int], publishers: int
) -> AcyclicFactor:
    """The selective-pruning paper's tiered shape: core chain a–e; inner vertices ``n<k>`` below the core
    (``inner_per_core[c]`` under core c), subscriber edges ``s<k>`` below the inner ones
    (``edges_per_inner[k]`` under ``n<k>``) and ``publishers`` publisher edges ``p<k>`` on e (last core)."""
    edges = list(itertools.pairwise(TIERED_CORE))
    inner: list[str] = []
    for core, count in zip(TIERED_CORE, inner_per_core, strict=True):
        for _ in range(count):
            inner.append(f"n{len(inner)}")
            edges.append((core, inner[-1]))
    subs: list[str] = []
    for v, count in zip(inner, edges_per_inner, strict=True):
        for _ in range(count):
            subs.append(f"s{len(subs)}")
            edges.append((v, subs[-1]))
    pubs = [f"p{k}" for k in range(publishers)]
    edges.extend((TIERED_CORE[-1], p) for p in pubs)
    return AcyclicFactor(name, (*TIERED_CORE, *inner, *subs, *pubs), tuple(edges))


def paper_tiered() -> AcyclicFactor:
    """Selective pruning Fig. 6 (55 brokers: 23 inner of which the core A–E, 32 edge; publishers on the
    3 edges of E). The figure is not in the text: scotbed reads it as A–D with 4 inner brokers each and
    E with 2, the first 11 inner brokers with 2 edges and the other 7 with 1 (29 subscriber edges)."""
    return tiered("paper-tiered", (4, 4, 4, 4, 2), (2,) * 11 + (1,) * 7, 3)


def paper_tiered_small() -> AcyclicFactor:
    """The tiered shape for a 2-core machine (19 brokers): core A–E, one inner broker under each of
    A–D with 2 subscriber edges each, 2 publisher edges on E."""
    return tiered("paper-tiered-small", (1, 1, 1, 1, 0), (2, 2, 2, 2), 2)


#: the names of the factors of :func:`tiered`'s shape: the only overlays with the selective-pruning core
TIERED_FACTORS = frozenset(make().name for make in (paper_tiered, paper_tiered_small))

#: the named acyclic factors a spec may give as a bare string
NAMED_FACTORS: dict[str, Callable[[], AcyclicFactor]] = {
    "paper-fig2": paper_fig2,
    "paper-fig8": paper_fig8,
    "paper-tiered": paper_tiered,
    "paper-tiered-small": paper_tiered_small,
}


def kary(fanout: int, depth: int) -> AcyclicFactor:
    """Balanced k-ary tree; depth 0 is a single vertex. Vertices are numbered breadth-first."""
    if fanout < 1 or depth < 0:
        raise TopologyError(f"k-ary tree needs fanout >= 1 and depth >= 0, got {fanout}, {depth}")
    n = sum(fanout**d for d in range(depth + 1))
    vs = tuple(f"v{k}" for k in range(n))
    edges = tuple((vs[(k - 1) // fanout], vs[k]) for k in range(1, n))
    return AcyclicFactor(f"kary-{fanout}-{depth}", vs, edges)


def path(n: int) -> AcyclicFactor:
    if n < 1:
        raise TopologyError(f"path needs n >= 1, got {n}")
    vs = tuple(f"v{k}" for k in range(n))
    return AcyclicFactor(f"path-{n}", vs, tuple(itertools.pairwise(vs)))


def star(n: int) -> AcyclicFactor:
    """A centre v0 with n-1 leaves."""
    if n < 1:
        raise TopologyError(f"star needs n >= 1, got {n}")
    vs = tuple(f"v{k}" for k in range(n))
    return AcyclicFactor(f"star-{n}", vs, tuple(("v0", v) for v in vs[1:]))


def random_tree(n: int, seed: int) -> AcyclicFactor:
    """A uniformly random labelled tree (Prüfer sequence), reproducible by seed."""
    if n < 1:
        raise TopologyError(f"random tree needs n >= 1, got {n}")
    vs = tuple(f"v{k}" for k in range(n))
    if n == 1:
        return AcyclicFactor(f"random-{n}-{seed}", vs, ())
    if n == 2:
        return AcyclicFactor(f"random-{n}-{seed}", vs, (("v0", "v1"),))
    rng = random.Random(seed)
    prufer = [rng.randrange(n) for _ in range(n - 2)]
    degree = [1] * n
    for x in prufer:
        degree[x] += 1
    edges = []
    for x in prufer:
        leaf = min(k for k in range(n) if degree[k] == 1)
        edges.append((vs[leaf], vs[x]))
        degree[leaf] -= 1
        degree[x] -= 1
    u, w = (k for k in range(n) if degree[k] == 1)
    edges.append((vs[u], vs[w]))
    return AcyclicFactor(f"random-{n}-{seed}", vs, tuple(edges))


def from_edge_list(text: str, name: str = "edge-list") -> AcyclicFactor:
    """One edge per line, ``u v`` or ``u,v``; ``#`` starts a comment; a lone name is a vertex."""
    vertices: list[str] = []
    edges: list[tuple[str, str]] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = [p for p in re.split(r"[\s,]+", line) if p]
        if len(parts) > 2:
            raise TopologyError(f"{name}:{lineno}: expected 'u v', got {raw.strip()!r}")
        for p in parts:
            if p not in vertices:
                vertices.append(p)
        if len(parts) == 2:
            edges.append((parts[0], parts[1]))
    return AcyclicFactor(name, tuple(vertices), tuple(edges))


def from_graphml(text: str, name: str = "graphml") -> AcyclicFactor:
    """The nodes and edges of the first graph of a GraphML document (undirected)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise TopologyError(f"{name}: not valid GraphML/XML: {e}") from None
    ns = ""
    if root.tag.startswith("{"):
        ns = root.tag.split("}", 1)[0] + "}"
    graph = root.find(f"{ns}graph")
    if graph is None:
        raise TopologyError(f"{name}: no <graph> element")
    vertices = [n.get("id", "") for n in graph.findall(f"{ns}node")]
    edges = [(e.get("source", ""), e.get("target", "")) for e in graph.findall(f"{ns}edge")]
    return AcyclicFactor(name, tuple(vertices), tuple(edges))


# --- the product overlay ---------------------------------------------------------------------


@dataclass(frozen=True)
class Broker:
    id: str
    vertex: str  # a: the G_A coordinate, also the region index
    index: int  # i: the K_m coordinate, also the cluster index
    type: BrokerType

    @property
    def cluster(self) -> int:
        return self.index

    @property
    def region(self) -> str:
        return self.vertex


@dataclass(frozen=True)
class Link:
    """An undirected overlay link; ``a`` < ``b`` in broker order."""

    a: str
    b: str
    kind: LinkKind


@dataclass(frozen=True)
class Neighbour:
    id: str
    kind: LinkKind  # the link to this neighbour: an aCOL (same cluster) or an iCOL (same region)
    type: BrokerType
    cluster: int
    region: str


def broker_id(vertex: str, index: int) -> str:
    return f"b-{vertex}-{index}"


@dataclass(frozen=True)
class Scot:
    """G_A □ K_m. ``m == 1`` is the plain tree overlay."""

    factor: AcyclicFactor
    m: int
    brokers: tuple[Broker, ...] = field(init=False)
    links: tuple[Link, ...] = field(init=False)

    def __post_init__(self) -> None:
        if self.m < 1:
            raise TopologyError(f"connectivity factor K_m needs m >= 1, got {self.m}")
        brokers = tuple(
            Broker(broker_id(a, i), a, i, self.factor.vertex_type(a))
            for i in range(self.m)
            for a in self.factor.vertices
        )
        links: list[Link] = []
        for i in range(self.m):
            for u, v in self.factor.edges:
                links.append(Link(broker_id(u, i), broker_id(v, i), ACOL))
        for a in self.factor.vertices:
            for i in range(self.m):
                for j in range(i + 1, self.m):
                    links.append(Link(broker_id(a, i), broker_id(a, j), ICOL))
        object.__setattr__(self, "brokers", brokers)
        object.__setattr__(self, "links", tuple(links))

    @property
    def is_tree(self) -> bool:
        return self.m == 1

    @cached_property
    def by_id(self) -> dict[str, Broker]:
        return {b.id: b for b in self.brokers}

    def broker(self, vertex: str, index: int) -> Broker:
        return self.by_id[broker_id(vertex, index)]

    @cached_property
    def _neighbours(self) -> dict[str, tuple[Neighbour, ...]]:
        out: dict[str, list[Neighbour]] = {b.id: [] for b in self.brokers}
        for link in self.links:
            for x, y in ((link.a, link.b), (link.b, link.a)):
                nb = self.by_id[y]
                out[x].append(Neighbour(y, link.kind, nb.type, nb.cluster, nb.region))
        return {k: tuple(v) for k, v in out.items()}

    def neighbours(self, broker: str) -> tuple[Neighbour, ...]:
        return self._neighbours[broker]

    def clusters(self) -> dict[int, tuple[str, ...]]:
        return {i: tuple(b.id for b in self.brokers if b.index == i) for i in range(self.m)}

    def regions(self) -> dict[str, tuple[str, ...]]:
        return {a: tuple(b.id for b in self.brokers if b.vertex == a) for a in self.factor.vertices}

    def acols(self) -> list[Link]:
        return [link for link in self.links if link.kind == ACOL]

    def icols(self) -> list[Link]:
        return [link for link in self.links if link.kind == ICOL]

    def diameter(self) -> int:
        """diam(G_A □ K_m) = diam(G_A) + diam(K_m)."""
        return self.factor.diameter() + (1 if self.m > 1 else 0)

    def hop_distances(self, src: str) -> dict[str, int]:
        return _bfs({b: [n.id for n in ns] for b, ns in self._neighbours.items()}, src)

    def chromatic_need(self) -> int:
        """Nodes needed so that no broker shares a node with a neighbour: χ(G_A □ K_m) = max(2, m)
        (χ of a product is the max of the factors' χ; a tree with an edge is 2-colourable)."""
        tree_chi = 1 if len(self.factor.vertices) == 1 else 2
        return max(tree_chi, self.m)

    def summary(self) -> dict[str, Any]:
        n_edge = sum(1 for b in self.brokers if b.type == "edge")
        return {
            "kind": "tree" if self.is_tree else "scot",
            "acyclic": self.factor.name,
            "connectivity": self.m,
            "brokers": len(self.brokers),
            "clusters": self.m,
            "regions": len(self.factor.vertices),
            "acols": len(self.acols()),
            "icols": len(self.icols()),
            "links": len(self.links),
            "diameter": self.diameter(),
            "edge_brokers": n_edge,
            "inner_brokers": len(self.brokers) - n_edge,
            "chromatic_need": self.chromatic_need(),
        }

    def to_json(self) -> dict[str, Any]:
        """The ``topology.json`` document of a run (docs/design.md §5)."""
        return {
            "schema_version": 1,
            **self.summary(),
            "factor": {"vertices": list(self.factor.vertices), "edges": [list(e) for e in self.factor.edges]},
            "brokers": [
                {
                    "id": b.id,
                    "vertex": b.vertex,
                    "index": b.index,
                    "cluster": b.cluster,
                    "region": b.region,
                    "type": b.type,
                }
                for b in self.brokers
            ],
            "links": [{"a": link.a, "b": link.b, "kind": link.kind} for link in self.links],
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Scot:
        factor = AcyclicFactor(
            doc.get("acyclic", "from-json"),
            tuple(doc["factor"]["vertices"]),
            tuple((u, v) for u, v in doc["factor"]["edges"]),
        )
        return cls(factor, int(doc["connectivity"]))


def tree(factor: AcyclicFactor) -> Scot:
    return Scot(factor, 1)


def placement(
    scot: Scot,
    clients: Sequence[str],
    mode: str,
    seed: int,
    explicit: dict[str, str] | None = None,
    clusters: Iterable[int] | None = None,
) -> dict[str, str]:
    """Assign each client to a host broker, reproducibly by ``seed``.

    Modes: ``random`` (uniform over all brokers), ``edge`` (edge brokers only),
    ``per-cluster`` (round-robin over clusters, random broker inside; ``clusters``
    restricts which), ``explicit`` (``explicit`` maps every client to a broker).
    """
    rng = random.Random(seed)
    ids = [b.id for b in scot.brokers]
    if mode == "random":
        return {c: rng.choice(ids) for c in clients}
    if mode == "edge":
        edge = [b.id for b in scot.brokers if b.type == "edge"]
        return {c: rng.choice(edge) for c in clients}
    if mode == "per-cluster":
        chosen = sorted(set(clusters)) if clusters is not None else list(range(scot.m))
        by_cluster = scot.clusters()
        for i in chosen:
            if i not in by_cluster:
                raise TopologyError(f"placement: cluster {i} does not exist (0..{scot.m - 1})")
        return {c: rng.choice(by_cluster[chosen[k % len(chosen)]]) for k, c in enumerate(clients)}
    if mode == "explicit":
        explicit = explicit or {}
        out = {}
        for c in clients:
            if c not in explicit:
                raise TopologyError(f"placement: explicit mode has no broker for client {c!r}")
            if explicit[c] not in scot.by_id:
                raise TopologyError(f"placement: client {c!r} names unknown broker {explicit[c]!r}")
            out[c] = explicit[c]
        return out
    raise TopologyError(f"placement: unknown mode {mode!r}; allowed: random, edge, per-cluster, explicit")
