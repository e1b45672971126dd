"""The trit-annotated PST: Yes links equal the naive ones, trits are sound, lazy refresh equals a rebuild."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scotbed.filters import Filter, Predicate
from scotbed.matching import make_matcher
from scotbed.matching.pst import _STAR, Node
from scotbed.matching.trits import TritPst, trit_string

ATTRS = ["a", "b", "c"]
DOMAIN: list[Any] = [0, 1, 2.5, "A", "AB"]  # the event values of the brute-force check (plus missing)
LINKS = 4
value = st.sampled_from(DOMAIN)


@st.composite
def predicates(draw: st.DrawFn) -> Predicate:
    attr = draw(st.sampled_from(ATTRS))
    op = draw(st.sampled_from(["=", "=", "=", "!=", "<", ">=", "between", "prefix", "exists"]))
    if op == "exists":
        return Predicate(attr, op)
    if op == "prefix":
        return Predicate(attr, op, draw(st.sampled_from(["A", "AB", "B"])))
    if op == "between":
        lo, hi = sorted([draw(st.sampled_from([0, 1, 2, 3])), draw(st.sampled_from([0, 1, 2, 3]))])
        return Predicate(attr, op, (lo, hi))
    return Predicate(attr, op, draw(value))


filters = st.lists(predicates(), max_size=3).map(lambda ps: Filter(tuple(ps)))
events = st.dictionaries(st.sampled_from(ATTRS), value, max_size=3)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 20), st.tuples(filters, st.integers(0, LINKS - 1))),
        st.tuples(st.just("remove"), st.integers(0, 20), st.none()),
        st.tuples(st.just("match"), st.integers(1, 2**LINKS - 1), events),
    ),
    max_size=60,
)


def _apply(
    ops: list[tuple[str, int, Any]], order: list[str] | None = None
) -> tuple[TritPst, dict[Hashable, Any]]:
    pst = TritPst(order)
    live: dict[Hashable, tuple[Filter, int]] = {}
    for op, key, arg in ops:
        if op == "add":
            flt, link = arg
            pst.add_link_filter(key, flt, 1 << link)
            live[key] = (flt, link)
        elif op == "remove":
            pst.remove(key)
            live.pop(key, None)
        else:
            pst.links(arg, key)
    return pst, live


def _walk(node: Node, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Node]]:
    yield path, node
    for v, child in node.eq.items():
        yield from _walk(child, (*path, ("=", v)))
    for p, child in node.pre.items():
        yield from _walk(child, (*path, ("prefix", p)))
    if node.star is not None:
        yield from _walk(node.star, (*path, "*"))


def _subtree_keys(node: Node) -> list[Hashable]:
    return [k for _, n in _walk(node) for k in n.subs]


def _reached(pst: TritPst, attrs: dict[str, Any]) -> list[Node]:
    """Every node the full search (no trit pruning, every '*' edge) reaches for ``attrs``."""
    out, stack = [], [(pst._root, 0)]
    while stack:
        node, level = stack.pop()
        out.append(node)
        if level < len(pst._order):
            stack.extend((c, level + 1) for c in node.children(attrs, pst._order[level]))
            if node.star is not None:
                stack.append((node.star, level + 1))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=steps)
def test_yes_links_equal_the_links_of_the_naive_matches(ops: list[tuple[str, int, Any]]) -> None:
    pst = TritPst()
    naive = make_matcher("naive")
    link: dict[Hashable, int] = {}
    for op, key, arg in ops:
        if op == "add":
            flt, n = arg
            pst.add_link_filter(key, flt, 1 << n)
            naive.add(key, flt)
            link[key] = 1 << n
        elif op == "remove":
            pst.remove(key)
            naive.remove(key)
        else:
            want = 0
            for k in naive.match(arg):
                want |= link[k]
            assert pst.links(arg, key) == want & key, arg
            assert pst.last_steps >= 1


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=steps)
def test_lazily_refreshed_annotations_equal_annotations_built_from_scratch(
    ops: list[tuple[str, int, Any]],
) -> None:
    incremental, live = _apply(ops, order=ATTRS)
    scratch = TritPst(ATTRS)
    for key, (flt, n) in live.items():
        scratch.add_link_filter(key, flt, 1 << n)
    mine = {path: incremental.annotation(node) for path, node in _walk(incremental._root)}
    fresh = {path: scratch.annotation(node) for path, node in _walk(scratch._root)}
    assert mine == fresh


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=steps)
def test_yes_and_no_trits_are_sound_on_a_small_domain(ops: list[tuple[str, int, Any]]) -> None:
    """Brute force over every event of the domain: Yes = some subtree filter of that link matches every
    event reaching the node; No = none matches any such event."""
    pst, live = _apply(ops)
    pst.links({}, 1)  # refresh order and annotations
    choices = [[None, *DOMAIN]] * len(ATTRS)
    for values in itertools.product(*choices):
        attrs = {a: v for a, v in zip(ATTRS, values, strict=True) if v is not None}
        for node in _reached(pst, attrs):
            yes, maybe = pst.annotation(node)
            for n in range(LINKS):
                hit = any(live[k][1] == n and live[k][0].matches(attrs) for k in _subtree_keys(node))
                if yes >> n & 1:
                    assert hit, (attrs, n, trit_string((yes, maybe), LINKS))
                elif not maybe >> n & 1:
                    assert not hit, (attrs, n, trit_string((yes, maybe), LINKS))


def test_the_slides_combinations() -> None:
    """Alternative of MYY and NYN with the implicit No child is MMM; parallel with the '*' child YYN."""
    pst = TritPst(["a"])
    # link 0 Maybe and 1, 2 Yes under a = 1; link 1 Yes under a = 3; links 0, 1 Yes under '*'
    pst.add_link_filter("m0", Filter.parse("a = 1 and b > 5"), 1)
    pst.add_link_filter("y1", Filter.parse("a = 1"), 2)
    pst.add_link_filter("y2", Filter.parse("a = 1"), 4)
    pst.add_link_filter("y1b", Filter.parse("a = 3"), 2)
    pst.add_link_filter("s0", Filter.parse("b exists"), 1)
    pst.add_link_filter("s1", Filter(()), 2)
    assert trit_string(pst.annotation(pst._root.eq[1]), 3) == "MYY"
    assert trit_string(pst.annotation(pst._root.eq[3]), 3) == "NYN"
    assert pst._root.star is None  # '*' filters of the root level are stored at the root itself
    # own(root): s1 Yes on link 1, s0 Maybe on link 0 (residual 'b exists'); children: MMM
    assert trit_string(pst.annotation(pst._root), 3) == "MYM"
    assert pst.links({"a": 1, "b": 6}, 0b111) == 0b111
    assert pst.links({"a": 3}, 0b101) == 0
    assert pst.links({"a": 3, "b": 0}, 0b101) == 0b001
    assert _STAR is not None
