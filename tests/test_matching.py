"""Every matching engine gives the naive engine's match sets, on random filters and events, with removals."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scotbed.filters import Filter, Predicate
from scotbed.matching import make_matcher
from scotbed.matching.counting import CountingMatcher

ATTRS = ["a", "b", "c", "sym"]
numbers = st.one_of(
    st.integers(-5, 5),
    st.floats(-5, 5, allow_nan=False).map(lambda x: round(x * 2) / 2),
    st.sampled_from([2**53, 2**53 + 1, float(2**53), -0.0, float("inf"), float("-inf")]),
)
strings = st.sampled_from(["", "A", "AB", "ABC", "B", "IBM", "IB", "a", "1", "\x00", "A\x00"])
values = st.one_of(numbers, strings)
event_values = st.one_of(values, st.just(float("nan")))


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


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_counting_equals_naive(ops: list[tuple[str, int | None, object]]) -> None:
    naive, counting = make_matcher("naive"), CountingMatcher()
    for op, key, arg in ops:
        if op == "add":
            assert isinstance(arg, Filter)
            naive.add(key, arg)
            counting.add(key, arg)
        elif op == "remove":
            assert naive.remove(key) == counting.remove(key)
        else:
            assert isinstance(arg, dict)
            assert sorted(counting.match(arg)) == sorted(naive.match(arg)), arg
            counting.rebuild()  # the freshly built index must agree too
            assert sorted(counting.match(arg)) == sorted(naive.match(arg)), arg
        assert len(naive) == len(counting)


def test_counting_survives_many_adds_and_removals() -> None:
    naive, counting = make_matcher("naive"), make_matcher("counting")
    for i in range(3000):
        f = Filter.parse(f'sym = "S{i % 50}" and a between [{i % 7}, {i % 7 + 3}]')
        naive.add(i, f)
        counting.add(i, f)
        if i % 3 == 0:
            naive.remove(i // 2)
            counting.remove(i // 2)
        if i % 97 == 0:
            ev = {"sym": f"S{i % 50}", "a": 4}
            assert sorted(counting.match(ev)) == sorted(naive.match(ev))
    ev = {"sym": "S3", "a": 5.5}
    assert sorted(counting.match(ev)) == sorted(naive.match(ev))
    assert len(counting) == len(naive)
