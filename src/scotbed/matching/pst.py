"""The parallel search tree (PST) of Aguilera et al. (Gryphon), with residual tests at the leaves.

Why: equality tests prune whole subtrees, so an event only visits the branches it can satisfy instead of
every stored filter.

Structure: one tree level per attribute, in a fixed order. A node at level ``i`` tests ``order[i]``: a
hash map from a value to the child for the filters with an equality test ``order[i] = value``, and a
``'*'`` (don't care) child for the filters without one. Matching walks, at every node, the child for the
event's value of that attribute (if it has one) and the ``'*'`` child. A filter is stored at the node where
its last equality test ends (the trailing chain of ``'*'`` edges is elided).

Only ``=`` predicates are tree tests. Every other predicate of a filter - ranges, ``between``, ``!=``,
``prefix``, ``exists``, a further predicate on an attribute already tested, an ``=`` on an attribute
outside the current order - is a *residual* test, checked with the exact filter semantics on the
candidate filters at the node that stores them. This is the standard PST with residual tests.

Keys follow ``=``: Python's numeric ``==``/``hash`` make ``5`` and ``5.0`` one key while keeping
``2**53 + 1`` apart from ``float(2**53)`` (``float()`` normalisation would merge them), and a string never
equals a number, so filter values are the keys. An event value that is neither a string nor a number only
follows ``'*'``; NaN is never a filter value, so it finds no edge.

Order: attributes by how many filters test them with ``=`` (most first, ties by name). Adds and removes
update the tree incrementally under the current order; after enough of them the order is recomputed at the
next match and the tree is rebuilt if the order changed.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from scotbed.filters import Attributes, Filter

Residual = tuple[Callable[[Attributes], bool], ...]
REORDER_MIN = 32

_STAR: Any = object()
_MISSING: Any = object()


class _Node:
    __slots__ = ("eq", "star", "subs")

    def __init__(self) -> None:
        self.eq: dict[Any, _Node] = {}
        self.star: _Node | None = None
        self.subs: dict[Hashable, Residual] = {}

    def empty(self) -> bool:
        return not self.subs and not self.eq and self.star is None


def _equalities(flt: Filter) -> dict[str, int]:
    """Attribute -> index of the first ``=`` predicate on it."""
    out: dict[str, int] = {}
    for i, p in enumerate(flt.predicates):
        if p.op == "=" and p.attr not in out:
            out[p.attr] = i
    return out


class PstMatcher:
    def __init__(self) -> None:
        self._filters: dict[Hashable, Filter] = {}
        self._paths: dict[Hashable, tuple[Any, ...]] = {}
        self._eq_counts: dict[str, int] = {}
        self._order: list[str] = []
        self._root = _Node()
        self._changes = 0

    # --- Matcher interface ------------------------------------------------------------------

    def add(self, key: Hashable, flt: Filter) -> None:
        if key in self._filters:
            self.remove(key)
        self._filters[key] = flt
        for attr in _equalities(flt):
            self._eq_counts[attr] = self._eq_counts.get(attr, 0) + 1
        self._insert(key, flt)
        self._changes += 1

    def remove(self, key: Hashable) -> bool:
        flt = self._filters.pop(key, None)
        if flt is None:
            return False
        for attr in _equalities(flt):
            self._eq_counts[attr] -= 1
            if not self._eq_counts[attr]:
                del self._eq_counts[attr]
        path = self._paths.pop(key)
        nodes = [self._root]
        for label in path:
            nxt = nodes[-1].star if label is _STAR else nodes[-1].eq[label]
            assert nxt is not None
            nodes.append(nxt)
        del nodes[-1].subs[key]
        for depth in range(len(path), 0, -1):
            if not nodes[depth].empty():
                break
            label = path[depth - 1]
            if label is _STAR:
                nodes[depth - 1].star = None
            else:
                del nodes[depth - 1].eq[label]
        self._changes += 1
        return True

    def match(self, attrs: Attributes) -> list[Hashable]:
        if self._changes > max(REORDER_MIN, len(self._filters) // 4):
            self._changes = 0
            if self._desired_order() != self._order:
                self.rebuild()
        order = self._order
        levels = len(order)
        out: list[Hashable] = []
        stack = [(self._root, 0)]
        while stack:
            node, level = stack.pop()
            for key, residual in node.subs.items():
                for test in residual:
                    if not test(attrs):
                        break
                else:
                    out.append(key)
            if level < levels:
                if node.eq:
                    x = attrs.get(order[level], _MISSING)
                    if isinstance(x, (str, int, float)) and not isinstance(x, bool):
                        child = node.eq.get(x)
                        if child is not None:
                            stack.append((child, level + 1))
                if node.star is not None:
                    stack.append((node.star, level + 1))
        return out

    def __len__(self) -> int:
        return len(self._filters)

    def __contains__(self, key: object) -> bool:
        return key in self._filters

    # --- tree maintenance ----------------------------------------------------------------------

    def _desired_order(self) -> list[str]:
        return [a for a, _ in sorted(self._eq_counts.items(), key=lambda item: (-item[1], item[0]))]

    def _insert(self, key: Hashable, flt: Filter) -> None:
        eqs = _equalities(flt)
        preds = flt.predicates
        path: list[Any] = []
        tested: set[int] = set()
        last = 0
        for level, attr in enumerate(self._order):
            i = eqs.get(attr)
            if i is None:
                path.append(_STAR)
            else:
                path.append(preds[i].value)
                tested.add(i)
                last = level + 1
        del path[last:]
        node = self._root
        for label in path:
            if label is _STAR:
                if node.star is None:
                    node.star = _Node()
                node = node.star
            else:
                child = node.eq.get(label)
                if child is None:
                    child = node.eq[label] = _Node()
                node = child
        node.subs[key] = tuple(p.matches for i, p in enumerate(preds) if i not in tested)
        self._paths[key] = tuple(path)

    def rebuild(self) -> None:
        """Recompute the attribute order from the current filters and rebuild the tree under it."""
        self._order = self._desired_order()
        self._root = _Node()
        self._paths = {}
        for key, flt in self._filters.items():
            self._insert(key, flt)
        self._changes = 0
