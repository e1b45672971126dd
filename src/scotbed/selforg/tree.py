"""The dynamic overlay as a value: a tree over named brokers that changes by swaps only.

A swap adds the requested link e_n and removes one link e_r of the cycle e_n closes, so the result
is again a spanning tree; :meth:`Tree.swapped` refuses anything else.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from scotbed.selforg.costs import Edge, edge


@dataclass(frozen=True)
class Tree:
    """An undirected tree: broker names and links (each link spelled by :func:`edge`)."""

    brokers: frozenset[str]
    links: frozenset[Edge]

    @classmethod
    def of(cls, links: Iterable[tuple[str, str]], brokers: Iterable[str] = ()) -> Tree:
        es = frozenset(edge(u, v) for u, v in links)
        return cls(frozenset(brokers) | {v for e in es for v in e}, es)

    @classmethod
    def random(cls, brokers: Sequence[str], rng: random.Random) -> Tree:
        """A uniformly attached random tree (each broker links to a random earlier one)."""
        order = list(brokers)
        rng.shuffle(order)
        return cls.of(((order[i], order[rng.randrange(i)]) for i in range(1, len(order))), order)

    @cached_property
    def adjacency(self) -> dict[str, frozenset[str]]:
        nbrs: dict[str, set[str]] = {v: set() for v in self.brokers}
        for u, v in self.links:
            nbrs[u].add(v)
            nbrs[v].add(u)
        return {v: frozenset(n) for v, n in nbrs.items()}

    def is_spanning_tree(self) -> bool:
        if len(self.links) != len(self.brokers) - 1:
            return False
        return len(self._reach(next(iter(self.brokers)))) == len(self.brokers) if self.brokers else True

    def _reach(self, start: str) -> dict[str, str | None]:
        parent: dict[str, str | None] = {start: None}
        todo = deque([start])
        while todo:
            u = todo.popleft()
            for v in sorted(self.adjacency[u]):
                if v not in parent:
                    parent[v] = u
                    todo.append(v)
        return parent

    def path(self, src: str, dst: str) -> list[str]:
        """The brokers on the tree path src … dst, both ends included."""
        parent = self._reach(dst)
        if src not in parent:
            raise ValueError(f"{src} and {dst} are not connected")
        out = [src]
        while out[-1] != dst:
            nxt = parent[out[-1]]
            assert nxt is not None
            out.append(nxt)
        return out

    def next_hops(self, src: str) -> dict[str, str]:
        """Every other broker -> the neighbour of ``src`` toward it: what ``rpf`` entries point at."""
        parent = self._reach(src)
        out: dict[str, str] = {}
        for dst in parent:
            hop = dst
            while parent[hop] not in (src, None):
                hop = parent[hop]  # type: ignore[assignment]
            if hop != src:
                out[dst] = hop
        return out

    def within(self, src: str, hops: int) -> dict[str, int]:
        """N_η(src): every broker at most ``hops`` links away, with its distance (src itself at 0)."""
        dist = {src: 0}
        todo = deque([src])
        while todo:
            u = todo.popleft()
            if dist[u] == hops:
                continue
            for v in self.adjacency[u]:
                if v not in dist:
                    dist[v] = dist[u] + 1
                    todo.append(v)
        return dist

    def swapped(self, add: Edge, remove: Edge) -> Tree:
        """The tree with ``add`` in and ``remove`` out; ``remove`` must lie on the cycle ``add`` closes."""
        add, remove = edge(*add), edge(*remove)
        if add in self.links:
            raise ValueError(f"link {add} is already in the tree")
        cycle = path_edges(self.path(*add))
        if remove not in cycle:
            raise ValueError(f"link {remove} is not on the cycle {add} closes")
        return Tree(self.brokers, (self.links - {remove}) | {add})


def repointed(old: Tree, new: Tree) -> dict[str, dict[str, str]]:
    """Per broker, the host brokers whose next hop differs on ``new``: a relink's ``next_hop`` maps.

    After a swap only the brokers on the closed cycle change, and only toward the far side of the cut.
    """
    out: dict[str, dict[str, str]] = {}
    for b in sorted(new.brokers):
        before, after = old.next_hops(b), new.next_hops(b)
        changed = {h: n for h, n in after.items() if before.get(h) != n}
        if changed:
            out[b] = changed
    return out


def path_edges(path: Sequence[str]) -> list[Edge]:
    return [edge(a, b) for a, b in itertools.pairwise(path)]
