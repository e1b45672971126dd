"""Every matching engine gives the naive engine's match sets, on random filters and events, with removals."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scotbed.filters import Filter, Predicate
from scotbed.matching import make_matcher
from scotbed.matching.columnar import Columns, exact_filter
from scotbed.matching.pst import PstMatcher

ATTRS = ["a", "b", "c", "sym"]
# filter values are finite (filters refuse inf/NaN); notifications may still carry them
numbers = st.one_of(
    st.integers(-5, 5),
    st.floats(-5, 5, allow_nan=False).map(lambda x: round(x * 2) / 2),
    st.sampled_from([2**53, 2**53 + 1, float(2**53), -0.0]),
)
strings = st.sampled_from(["", "A", "AB", "ABC", "B", "IBM", "IB", "a", "1", "\x00", "A\x00"])
values = st.one_of(numbers, strings)
event_values = st.one_of(values, st.sampled_from([float("nan"), float("inf"), float("-inf")]))


@st.composite
def predicates(draw: st.DrawFn) -> Predicate:
    attr = draw(st.sampled_from(ATTRS))
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "between", "prefix", "exists"]))
    if op == "exists":
        return Predicate(attr, op)
    if op == "prefix":
        return Predicate(attr, op, draw(strings))
    if op == "between":
        kind = draw(st.sampled_from([numbers, strings]))
        lo, hi = sorted([draw(kind), draw(kind)])
        return Predicate(attr, op, (lo, hi))
    return Predicate(attr, op, draw(values))


filters = st.lists(predicates(), max_size=4).map(lambda ps: Filter(tuple(ps)))
events = st.dictionaries(st.sampled_from(ATTRS), event_values, max_size=4)
# a step: add a filter under a key, remove a key, or match an event
steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 30), filters),
        st.tuples(st.just("remove"), st.integers(0, 30), st.none()),
        st.tuples(st.just("match"), st.none(), events),
    ),
    max_size=80,
)

Op = tuple[str, int | None, object]  # ("add", key, filter) | ("remove", key, None) | ("match", None, event)

ENGINES = ["counting", "pst"]


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=steps)
def test_engine_equals_naive(engine: str, ops: list[Op]) -> None:
    _replay_against_naive(make_matcher(engine), ops, rebuild=True)


def _replay_against_naive(fast: Any, ops: list[Op], rebuild: bool = False) -> None:
    """Apply ``ops`` to ``fast`` and the naive engine; every result must agree (also after a rebuild)."""
    naive = make_matcher("naive")
    for op, key, arg in ops:
        if op == "add":
            assert isinstance(arg, Filter)
            naive.add(key, arg)
            fast.add(key, arg)
        elif op == "remove":
            assert naive.remove(key) == fast.remove(key)
        else:
            assert isinstance(arg, dict)
            assert sorted(fast.match(arg)) == sorted(naive.match(arg)), arg
            if rebuild:
                fast.rebuild()  # the freshly built index must agree too
                assert sorted(fast.match(arg)) == sorted(naive.match(arg)), arg
        assert len(naive) == len(fast)
        if key is not None:
            assert (key in naive) == (key in fast)


@pytest.mark.parametrize("engine", ENGINES)
def test_engine_survives_many_adds_and_removals(engine: str) -> None:
    naive, fast = make_matcher("naive"), make_matcher(engine)
    for i in range(3000):
        f = Filter.parse(f'sym = "S{i % 50}" and a between [{i % 7}, {i % 7 + 3}]')
        naive.add(i, f)
        fast.add(i, f)
        if i % 3 == 0:
            naive.remove(i // 2)
            fast.remove(i // 2)
        if i % 97 == 0:
            ev = {"sym": f"S{i % 50}", "a": 4}
            assert sorted(fast.match(ev)) == sorted(naive.match(ev))
    ev = {"sym": "S3", "a": 5.5}
    assert sorted(fast.match(ev)) == sorted(naive.match(ev))
    assert len(fast) == len(naive)


def test_pst_equality_type_rules() -> None:
    pst = PstMatcher()
    pst.add("num", Filter.parse("price = 5"))
    pst.add("float", Filter.parse("price = 5.0"))
    pst.add("str", Filter.parse('price = "5"'))
    pst.add("big", Filter.parse(f"price = {2**53 + 1}"))
    pst.add("sym", Filter.parse("symbol = 5 and price exists"))
    pst.rebuild()
    assert sorted(pst.match({"price": 5.0})) == ["float", "num"]
    assert sorted(pst.match({"price": 5})) == ["float", "num"]
    assert pst.match({"price": "5"}) == ["str"]
    assert pst.match({"price": float(2**53)}) == []
    assert pst.match({"price": 2**53 + 1}) == ["big"]
    assert pst.match({"symbol": "5", "price": 1}) == []
    assert pst.match({"symbol": 5.0, "price": 1}) == ["sym"]
    assert pst.match({"price": float("nan")}) == []


def test_pst_reorders_lazily_and_prunes() -> None:
    naive, pst = make_matcher("naive"), PstMatcher()
    for i in range(200):
        f = Filter.parse(f'a = {i % 3} and sym = "S{i % 10}"' if i < 100 else f"b = {i % 4} and c >= {i % 5}")
        naive.add(i, f)
        pst.add(i, f)
        ev = {"a": i % 3, "sym": f"S{i % 10}", "b": float(i % 4), "c": 2}
        assert sorted(pst.match(ev)) == sorted(naive.match(ev))
    assert pst._order[0] in ("a", "sym")
    for i in range(120):
        naive.remove(i)
        pst.remove(i)
        ev = {"a": i % 3, "sym": f"S{i % 10}", "b": i % 4, "c": 3.5}
        assert sorted(pst.match(ev)) == sorted(naive.match(ev))
    assert pst._order[0] == "b"
    for i in range(120, 200):
        pst.remove(i)
    assert len(pst) == 0 and pst._root.empty()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=steps)
def test_pst_vectorised_ranges_equal_naive(ops: list[Op]) -> None:
    """With every range shape compared by numpy (VECTOR_MIN = 1), match sets stay exact."""
    import scotbed.matching.pst as pst_module

    saved = pst_module.VECTOR_MIN
    pst_module.VECTOR_MIN = 1
    try:
        _replay_against_naive(PstMatcher(), ops)
    finally:
        pst_module.VECTOR_MIN = saved


def test_pst_order_factoring_and_steps() -> None:
    """Selective equality attributes go first; a trivial '*' chain is skipped; steps count visited nodes."""
    pst = PstMatcher()
    for i in range(100):
        pst.add(i, Filter.parse(f'sym = "S{i % 50}" and kind = "k{i % 2}" and px <= {i}'))
    pst.add("pre", Filter.parse('sym prefix "S1" and px between [0, 5]'))
    pst.add("any", Filter.parse("px < 3"))
    pst.add("venue", Filter.parse('venue = "X"'))
    ev = {"sym": "S10", "kind": "k0", "px": 2, "venue": "X"}
    assert sorted(pst.match(ev), key=str) == sorted([10, 60, "any", "pre", "venue"], key=str)
    assert pst._order == ["sym", "kind", "venue"]
    # root, sym=S10, its kind=k0 child, the prefix child S1, then past the trivial root '*' node
    # straight to the venue level and its X child
    assert pst.last_steps == 6


def test_pst_compares_many_ranges_of_one_shape_with_numpy() -> None:
    """Enough residuals of one range shape at a node go into one numpy shape; its matches stay exact."""
    pst = PstMatcher()
    for k in range(40):
        pst.add(("ge", k), Filter.parse(f"a >= {k}"))
        pst.add(("bt", k), Filter.parse(f"a between [{k}, {k + 2}] and b < {k}"))
    assert len(pst._root.compiled().shapes) == 2
    got = sorted(pst.match({"a": 3, "b": 2.5}))
    assert got == sorted([("ge", k) for k in range(4)] + [("bt", k) for k in (3,)])
    assert pst.match({"a": float("nan")}) == [] and pst.match({"b": 1}) == []


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flts=st.lists(filters, min_size=1, max_size=6), batch=st.lists(events, min_size=1, max_size=12))
def test_columnar_counts_equal_filter_matches(flts: list[Filter], batch: list[dict[str, Any]]) -> None:
    """Counting over numpy columns gives Filter.matches's counts, or refuses what it cannot compare."""
    from scotbed.workloads.subscriptions import mean_selectivity

    cols = Columns.of(batch)
    want = [sum(f.matches(e) for e in batch) for f in flts]
    if cols is not None:
        assert [cols.count(f) for f in flts if exact_filter(f)] == [
            w for f, w in zip(flts, want, strict=True) if exact_filter(f)
        ]
        for f in flts:  # and the very notifications, which the oracle's batches take
            if exact_filter(f):
                assert cols.matches(f).tolist() == [f.matches(e) for e in batch]
    assert mean_selectivity(flts, batch) == sum(want) / (len(flts) * len(batch))


def test_columnar_refuses_values_numpy_cannot_compare() -> None:

    assert Columns.of([{"a": 1}, {"a": "x"}]) is not None
    for bad in (True, 2**53, "A\x00", [1]):
        assert Columns.of([{"a": 1}, {"a": bad}]) is None
    assert not exact_filter(Filter.parse("a = 9007199254740992"))
    assert exact_filter(Filter.parse('a between [1, 2] and b prefix "A"'))
