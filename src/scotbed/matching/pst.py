"""The parallel search tree (PST) of Aguilera et al. (Gryphon), with residual tests at the nodes.

Why: equality tests prune whole subtrees, so an event only visits the branches it can satisfy instead of
every stored filter.

Structure: one tree level per attribute, in an order chosen from the subscriptions. A node at level ``i``
tests ``order[i]``: a hash map from a value to the child for the filters with an equality test
``order[i] = value``, a map from a string prefix to the child for the filters with a ``prefix`` test (and
no ``=``) on it, and a ``'*'`` (don't care) child for the filters with neither. Matching walks, at every
node, the child for the event's value, the children for every prefix of it, and the ``'*'`` child. A filter
is stored at the node where its last tree test ends (the trailing chain of ``'*'`` edges is elided).

Every other predicate of a filter - ranges, ``between``, ``!=``, ``exists``, a further predicate on an
attribute already tested, a test on an attribute outside the order - is a *residual* test, checked with
the exact filter semantics on the filters stored at the node.

Optimisations (Gryphon's, adapted):

- attribute order: attributes with tree tests, by the expected number of filters a search keeps at that
  level (don't-cares plus tested filters divided by the distinct values), fewest first, ties by name -
  equality-heavy, selective attributes go to the root;
- factoring of common tests: the filters stored at a node are grouped by their residual test tuple, so a
  test shared by many filters is evaluated once per event; the groups whose residual contains a numeric
  half-range (``<``, ``<=``, ``>``, ``>=``, ``between``) are sorted by its bound, and only the satisfied
  prefix or suffix (found by bisection) is tested further;
- trivial-test elimination: a ``'*'`` edge into a node with nothing but a ``'*'`` child is followed
  through to the first node that tests something (cached per node, invalidated along changed paths).

Keys follow ``=``: Python's numeric ``==``/``hash`` make ``5`` and ``5.0`` one key while keeping
``2**53 + 1`` apart from ``float(2**53)``, and a string never equals a number, so filter values are the
keys. An event value that is neither a string nor a number only follows ``'*'``; NaN finds no edge.

Adds and removes update the tree incrementally under the current order; after enough of them the order is
recomputed at the next match and the tree is rebuilt if the order changed. ``last_steps`` is the number of
PST nodes the last ``match`` visited (Gryphon's matching steps).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from scotbed.filters import Attributes, Filter, Predicate

Test = Callable[[Attributes], bool]
REORDER_MIN = 32
VECTOR_MIN = 32  # residual groups of one range shape from which a node compares them with numpy
EXACT = 2**53  # |int| up to which float64 holds it exactly

_STAR: Any = object()
_MISSING: Any = object()
_HALF = {">=": "ge", ">": "gt", "<=": "le", "<": "lt", "between": "ge"}
# per half-range op, the comparison ``bound ? x`` that holds for a satisfied predicate (chosen at build)
_BOUND_HOLDS = {
    ">=": np.less_equal,
    "between": np.less_equal,
    ">": np.less,
    "<=": np.greater_equal,
    "<": np.greater,
}


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class _Range:
    """Groups whose residual holds one numeric half-range on ``attr``, sorted by its bound."""

    __slots__ = ("attr", "bounds", "groups", "kind")

    def __init__(
        self, attr: str, kind: str, rows: list[tuple[Any, tuple[Test, ...], list[Hashable]]]
    ) -> None:
        rows.sort(key=lambda r: r[0])
        self.attr, self.kind = attr, kind
        self.bounds = [r[0] for r in rows]
        self.groups = [(r[1], r[2]) for r in rows]

    def satisfied(self, x: Any) -> list[tuple[tuple[Test, ...], list[Hashable]]]:
        kind, bounds = self.kind, self.bounds
        if kind == "ge":  # bound <= x
            return self.groups[: bisect.bisect_right(bounds, x)]
        if kind == "gt":  # bound < x
            return self.groups[: bisect.bisect_left(bounds, x)]
        if kind == "le":  # bound >= x
            return self.groups[bisect.bisect_left(bounds, x) :]
        return self.groups[bisect.bisect_right(bounds, x) :]  # lt: bound > x


class _Shape:
    """Groups whose residual is only numeric half-ranges on the same (attr, op) columns, as numpy arrays.

    Every bound is exact in float64 (checked at build); an event value that is not (a huge int) makes
    :meth:`collect` fall back to the exact per-group tests.
    """

    __slots__ = ("columns", "groups", "keys")

    def __init__(self, rows: list[tuple[tuple[Predicate, ...], list[Hashable]]]) -> None:
        first = rows[0][0]
        # (attribute, the comparison bound ? x that holds, lower bounds, upper bounds of a between)
        self.columns: list[tuple[str, Any, np.ndarray, np.ndarray | None]] = []
        for j, p in enumerate(first):
            lows = [r[0][j].value[0] if p.op == "between" else r[0][j].value for r in rows]
            highs = (
                np.asarray([r[0][j].value[1] for r in rows], dtype=np.float64) if p.op == "between" else None
            )
            self.columns.append((p.attr, _BOUND_HOLDS[p.op], np.asarray(lows, dtype=np.float64), highs))
        self.keys = [r[1] for r in rows]
        self.groups: list[tuple[tuple[Test, ...], list[Hashable]]] = [
            (tuple(p.matches for p in r[0]), r[1]) for r in rows
        ]

    def collect(self, attrs: Attributes, out: list[Hashable]) -> None:
        mask: np.ndarray | None = None
        for attr, holds, low, high in self.columns:
            x = attrs.get(attr, _MISSING)
            if not _is_number(x) or (isinstance(x, float) and math.isnan(x)):
                return
            if isinstance(x, int) and abs(x) > EXACT:
                _collect_groups(self.groups, attrs, out)
                return
            m = holds(low, x)
            if high is not None:
                m &= high >= x
            mask = m if mask is None else mask & m
        assert mask is not None
        keys = self.keys
        for i in np.flatnonzero(mask).tolist():
            out.extend(keys[i])


def _shape_of(residual: tuple[Predicate, ...]) -> tuple[tuple[str, str], ...] | None:
    """The (attr, op) columns of a residual made only of float64-exact numeric ranges; else None."""
    if not residual or not all(_indexable(p) for p in residual):
        return None
    for p in residual:
        for v in p.value if p.op == "between" else (p.value,):
            if isinstance(v, int) and abs(v) > EXACT:
                return None
    return tuple((p.attr, p.op) for p in residual)


def _collect_groups(
    groups: Sequence[tuple[tuple[Test, ...], list[Hashable]]], attrs: Attributes, out: list[Hashable]
) -> None:
    for tests, keys in groups:
        for test in tests:
            if not test(attrs):
                break
        else:
            out.extend(keys)


class _Bucket:
    """The filters stored at one node, compiled for matching: factored and range-indexed."""

    __slots__ = ("groups", "plain", "ranges", "shapes")

    def __init__(self, subs: dict[Hashable, tuple[Predicate, ...]]) -> None:
        by_residual: dict[tuple[Predicate, ...], list[Hashable]] = {}
        for key, residual in subs.items():
            by_residual.setdefault(residual, []).append(key)
        self.plain: list[Hashable] = by_residual.pop((), [])
        self.groups: list[tuple[tuple[Test, ...], list[Hashable]]] = []
        shapes: dict[tuple[tuple[str, str], ...], list[tuple[tuple[Predicate, ...], list[Hashable]]]] = {}
        for residual, keys in by_residual.items():
            shape = _shape_of(residual)
            if shape is not None:
                shapes.setdefault(shape, []).append((residual, keys))
        self.shapes: list[_Shape] = []
        for rows in shapes.values():
            if len(rows) >= VECTOR_MIN:
                self.shapes.append(_Shape(rows))
                for residual, _ in rows:
                    del by_residual[residual]
        ranges: dict[tuple[str, str], list[tuple[Any, tuple[Test, ...], list[Hashable]]]] = {}
        for residual, keys in by_residual.items():
            idx = next((i for i, p in enumerate(residual) if _indexable(p)), None)
            if idx is None:
                self.groups.append((tuple(p.matches for p in residual), keys))
                continue
            p = residual[idx]
            bound = p.value[0] if p.op == "between" else p.value
            rest = residual if p.op == "between" else residual[:idx] + residual[idx + 1 :]
            ranges.setdefault((p.attr, _HALF[p.op]), []).append((bound, tuple(q.matches for q in rest), keys))
        self.ranges = [_Range(attr, kind, rows) for (attr, kind), rows in ranges.items()]

    def collect(self, attrs: Attributes, out: list[Hashable], plain: bool = True) -> None:
        if plain:
            out.extend(self.plain)
        _collect_groups(self.groups, attrs, out)
        for shape in self.shapes:
            shape.collect(attrs, out)
        for rng in self.ranges:
            x = attrs.get(rng.attr, _MISSING)
            if not _is_number(x) or (isinstance(x, float) and math.isnan(x)):
                continue  # a numeric range is false on a missing, non-numeric or NaN value
            _collect_groups(rng.satisfied(x), attrs, out)


def _indexable(p: Predicate) -> bool:
    if p.op == "between":
        return _is_number(p.value[0])
    return p.op in _HALF and _is_number(p.value)


class Node:
    """A tree node: its children by ``=`` value, by prefix and ``'*'``, and the filters stored at it (a
    subclass's engine, :class:`scotbed.matching.trits.TritPst`, annotates it too)."""

    __slots__ = ("ann", "bucket", "eq", "jump", "pre", "pre_lengths", "skip", "star", "subs")

    def __init__(self) -> None:
        self.eq: dict[Any, Node] = {}
        self.pre: dict[str, Node] = {}
        self.pre_lengths: dict[int, int] = {}  # prefix length -> prefixes of that length in ``pre``
        self.star: Node | None = None
        self.subs: dict[Hashable, tuple[Predicate, ...]] = {}
        self.bucket: _Bucket | None = None  # compiled ``subs``; None = stale
        self.jump: Node | None = None  # first non-trivial node down the '*' chain (valid with bucket)
        self.skip = 1  # levels from this node down to ``jump``
        self.ann: Any = None  # an annotation layered on by a subclass (link matching); None = stale

    def empty(self) -> bool:
        return not self.subs and not self.eq and not self.pre and self.star is None

    def trivial(self) -> bool:
        return not self.subs and not self.eq and not self.pre

    def compiled(self) -> _Bucket:
        """The compiled bucket; also refreshes the '*' jump (trivial-test elimination)."""
        if self.bucket is None:
            self.bucket = _Bucket(self.subs)
            nxt, skip = self.star, 1
            while nxt is not None and nxt.trivial():
                nxt, skip = nxt.star, skip + 1
            self.jump, self.skip = nxt, skip
        return self.bucket

    def children(self, attrs: Attributes, attr: str) -> list[Node]:
        """The children a search follows for the event ``attrs`` at this node (testing ``attr``)."""
        out: list[Node] = []
        if self.eq or self.pre:
            x = attrs.get(attr, _MISSING)
            if isinstance(x, (str, int, float)) and not isinstance(x, bool):
                child = self.eq.get(x)
                if child is not None:
                    out.append(child)
                if isinstance(x, str):
                    for n in self.pre_lengths:
                        if n <= len(x):
                            child = self.pre.get(x[:n])
                            if child is not None:
                                out.append(child)
        return out


def _tree_tests(flt: Filter) -> dict[str, int]:
    """Attribute -> index of its tree test: the first ``=`` on it, else the first string ``prefix``."""
    out: dict[str, int] = {}
    for i, p in enumerate(flt.predicates):
        if p.op == "=" and p.attr not in out:
            out[p.attr] = i
    for i, p in enumerate(flt.predicates):
        if p.op == "prefix" and p.attr not in out:
            out[p.attr] = i
    return out


class PstMatcher:
    """The PST engine. ``order`` fixes the attribute order (no reordering); by default it is chosen."""

    def __init__(self, order: Sequence[str] | None = None) -> None:
        self._filters: dict[Hashable, Filter] = {}
        self._paths: dict[Hashable, tuple[Any, ...]] = {}
        self._stats: dict[str, dict[Any, int]] = {}  # attr -> {test label: filters}; '*' counted apart
        self._fixed = order is not None
        self._order: list[str] = list(order) if order is not None else []
        self._root = Node()
        self._changes = 0
        self.last_steps = 0

    # --- Matcher interface ------------------------------------------------------------------

    def add(self, key: Hashable, flt: Filter) -> None:
        if key in self._filters:
            self.remove(key)
        self._filters[key] = flt
        for attr, i in _tree_tests(flt).items():
            counts = self._stats.setdefault(attr, {})
            label = _label(flt.predicates[i])
            counts[label] = counts.get(label, 0) + 1
        self._insert(key, flt)
        self._changes += 1

    def remove(self, key: Hashable) -> bool:
        flt = self._filters.pop(key, None)
        if flt is None:
            return False
        for attr, i in _tree_tests(flt).items():
            counts = self._stats[attr]
            label = _label(flt.predicates[i])
            counts[label] -= 1
            if not counts[label]:
                del counts[label]
                if not counts:
                    del self._stats[attr]
        path = self._paths.pop(key)
        nodes = self._path_nodes(path)
        del nodes[-1].subs[key]
        for node in nodes:
            node.bucket = None
            node.ann = None
        for depth in range(len(path), 0, -1):
            if not nodes[depth].empty():
                break
            _unlink(nodes[depth - 1], path[depth - 1])
        self._changes += 1
        return True

    def match(self, attrs: Attributes) -> list[Hashable]:
        self._maybe_reorder()
        order = self._order
        levels = len(order)
        out: list[Hashable] = []
        steps = 0
        stack = [(self._root, 0)]
        while stack:
            node, level = stack.pop()
            steps += 1
            bucket = node.compiled()
            if node.subs:
                bucket.collect(attrs, out)
            if level < levels:
                for child in node.children(attrs, order[level]):
                    stack.append((child, level + 1))
                star = node.jump
                if star is not None:
                    stack.append((star, level + node.skip))
        self.last_steps = steps
        return out

    def __len__(self) -> int:
        return len(self._filters)

    def __contains__(self, key: object) -> bool:
        return key in self._filters

    # --- tree maintenance ----------------------------------------------------------------------

    def _maybe_reorder(self) -> None:
        if not self._fixed and self._changes > max(REORDER_MIN, len(self._filters) // 4):
            self._changes = 0
            if self._desired_order() != self._order:
                self.rebuild()
            _compile_stale(self._root)

    def _desired_order(self) -> list[str]:
        """Attributes by the filters a search keeps at their level (don't-cares + tested / distinct)."""
        total = len(self._filters)

        def kept(attr: str) -> float:
            counts = self._stats[attr]
            tested = sum(counts.values())
            return (total - tested) + tested / len(counts)

        return sorted(self._stats, key=lambda a: (kept(a), a))

    def _path_nodes(self, path: tuple[Any, ...]) -> list[Node]:
        nodes = [self._root]
        for label in path:
            nodes.append(_child(nodes[-1], label))
        return nodes

    def _insert(self, key: Hashable, flt: Filter) -> None:
        tests = _tree_tests(flt)
        preds = flt.predicates
        path: list[Any] = []
        tested: set[int] = set()
        last = 0
        for level, attr in enumerate(self._order):
            i = tests.get(attr)
            if i is None:
                path.append(_STAR)
            else:
                path.append(_label(preds[i]))
                tested.add(i)
                last = level + 1
        del path[last:]
        node = self._root
        node.bucket = node.ann = None
        for label in path:
            node = _child(node, label, create=True)
            node.bucket = node.ann = None
        node.subs[key] = tuple(p for i, p in enumerate(preds) if i not in tested)
        self._paths[key] = tuple(path)

    def rebuild(self) -> None:
        """Recompute the attribute order (unless fixed) and rebuild the tree under it."""
        if not self._fixed:
            self._order = self._desired_order()
        self._root = Node()
        self._paths = {}
        for key, flt in self._filters.items():
            self._insert(key, flt)
        self._changes = 0


def _label(p: Predicate) -> Any:
    """The edge label of a tree test: the value of ``=``, ``("prefix", value)`` of ``prefix``."""
    return ("prefix", p.value) if p.op == "prefix" else p.value


def _is_prefix(label: Any) -> bool:
    return type(label) is tuple and len(label) == 2 and label[0] == "prefix"


def _child(node: Node, label: Any, create: bool = False) -> Node:
    if label is _STAR:
        if node.star is None:
            assert create
            node.star = Node()
        return node.star
    if _is_prefix(label):
        child = node.pre.get(label[1])
        if child is None:
            assert create
            child = node.pre[label[1]] = Node()
            n = len(label[1])
            node.pre_lengths[n] = node.pre_lengths.get(n, 0) + 1
        return child
    child = node.eq.get(label)
    if child is None:
        assert create
        child = node.eq[label] = Node()
    return child


def _unlink(node: Node, label: Any) -> None:
    if label is _STAR:
        node.star = None
    elif _is_prefix(label):
        del node.pre[label[1]]
        n = len(label[1])
        node.pre_lengths[n] -= 1
        if not node.pre_lengths[n]:
            del node.pre_lengths[n]
    else:
        del node.eq[label]


def _compile_stale(node: Node) -> None:
    """Compile every stale node (they form a subtree-closed set under stale ancestors)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.bucket is None:
            n.compiled()
            stack.extend(n.eq.values())
            stack.extend(n.pre.values())
            if n.star is not None:
                stack.append(n.star)
