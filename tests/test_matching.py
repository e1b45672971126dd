"""Every matching engine gives the naive engine's match sets, on random filters and events, with removals."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scotbed.analysis.pub_arrow import parse_publications
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
    from scotbed.matching.columnar import Columns, exact_filter
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
    # the same batch as JSON lines, parsed into columns by Arrow (the realised selectivity's columns)
    text = "".join(json.dumps({"pub_id": f"p{i}", "attrs": e}) + "\n" for i, e in enumerate(batch))
    arrow = _attr_columns(text.encode())
    if arrow is not None:
        assert arrow.n == len(batch)
        for f in flts:
            if exact_filter(f):
                assert arrow.matches(f).tolist() == [f.matches(e) for e in batch]


# notifications whose every attribute keeps one kind of plain value: Arrow's columns always take them
plain_events = st.fixed_dictionaries(
    {},
    optional={
        "a": st.integers(-5, 5),
        "b": numbers.filter(lambda v: abs(v) < 2**53),
        "c": strings.filter(lambda v: "\x00" not in v),
        "sym": strings.filter(lambda v: "\x00" not in v),
    },
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flts=st.lists(filters, min_size=1, max_size=6), batch=st.lists(plain_events, min_size=1, max_size=12))
def test_arrow_columns_of_plain_values_match_as_filters_do(
    flts: list[Filter], batch: list[dict[str, Any]]
) -> None:
    text = "".join(json.dumps({"pub_id": f"p{i}", "attrs": e}) + "\n" for i, e in enumerate(batch))
    arrow = _attr_columns(text.encode())
    assert arrow is not None and arrow.n == len(batch)
    for f in flts:
        if exact_filter(f):
            assert arrow.matches(f).tolist() == [f.matches(e) for e in batch]


def test_arrow_columns_take_what_the_dicts_take_and_refuse_what_arrow_cannot_tell() -> None:
    """Arrow's columns are used for plain numbers and strings, absent attributes included; refused where
    its parse loses what the decoded dicts hold (an explicit null, a big integer, an ISO time, a NUL)."""
    ok = _attr_columns(b'{"attrs":{"a":1,"s":"IBM"}}\n{"attrs":{"a":2.5}}\n\n{"attrs":{}}\n')
    assert ok is not None and ok.n == 3
    assert ok.matches(Filter.parse("a > 1")).tolist() == [False, True, False]
    assert ok.matches(Filter.parse("a != 1")).tolist() == [False, True, False]  # absent fails
    assert ok.matches(Filter.parse('s prefix "I"')).tolist() == [True, False, False]
    for bad in ('{"a":null}', '{"a":9007199254740993}', '{"a":"2020-01-01T00:00:00"}', '{"a":"A\\u0000"}',
                '{"a":true}', '{"a":[1]}', '{"a":1,"a":2}', '{"a":NaN}'):  # fmt: skip
        assert _attr_columns(f'{{"attrs":{{"a":1}}}}\n{{"attrs":{bad}}}\n'.encode()) is None, bad
    assert _attr_columns(b'{"attrs":{"a":1}}\n{"pub_id":"p"}\n') is None  # a line without attrs
    assert _attr_columns(b'{"attrs":{"a":1}}\n{"attrs":"x"}\n') is None


def _attr_columns(text: bytes) -> Columns | None:
    """The attrs of the workload lines ``text`` as Arrow parses them, or None where it refuses."""
    pubs = parse_publications(text)
    return None if pubs is None else pubs.attrs


def test_columnar_refuses_values_numpy_cannot_compare() -> None:
    from scotbed.matching.columnar import Columns, exact_filter

    assert Columns.of([{"a": 1}, {"a": "x"}]) is not None
    for bad in (True, 2**53, "A\x00", [1]):
        assert Columns.of([{"a": 1}, {"a": bad}]) is None
    assert not exact_filter(Filter.parse("a = 9007199254740992"))
    assert exact_filter(Filter.parse('a between [1, 2] and b prefix "A"'))


def test_counting_indexes_a_table_that_stopped_changing_instead_of_scanning_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A few added filters wait in the pending set, scanned at each match; once the matches have scanned
    as many as a rebuild indexes, the table is indexed and later matches scan none of them (a broker
    with 101 subscriptions scanned all of them for every notification)."""
    scans = [0]
    plain = Filter.matches

    def counted(self: Filter, attrs: Any) -> bool:
        scans[0] += 1
        return plain(self, attrs)

    matcher = make_matcher("counting")
    for k in range(101):
        matcher.add(f"s{k}", Filter((Predicate("sym", "=", f"S{k}"), Predicate("p", ">", 10))))
    monkeypatch.setattr(Filter, "matches", counted)
    assert matcher.match({"sym": "S7", "p": 11}) == ["s7"]
    assert scans[0] == 101  # the first match scans the pending filters
    for _ in range(100):
        assert matcher.match({"sym": "S7", "p": 11}) == ["s7"]
    assert scans[0] == 101  # then the index answers
    matcher.add("late", Filter((Predicate("p", ">", 10),)))
    assert sorted(matcher.match({"sym": "S7", "p": 11})) == ["late", "s7"]
    assert scans[0] == 102  # a filter added later is scanned until it is indexed too


def test_counting_takes_numeric_betweens_as_intervals_inclusive_and_exact() -> None:
    """A numeric ``between`` counts once, at both ends inclusive, whichever bound the engine bisects;
    an event value float64 cannot hold exactly is compared in Python."""
    m = make_matcher("counting")
    for k in range(40):
        m.add(("narrow", k), Filter.parse(f"a between [{k}, {k + 0.5}] and b = 1"))
    m.add("wide", Filter.parse("a between [-100, 100]"))
    m.add("edge", Filter.parse(f"a between [{2**53 - 1}, {2**53}]"))
    m.add("strings", Filter.parse('a between ["A", "C"]'))
    m.rebuild()
    assert sorted(map(str, m.match({"a": 3.5, "b": 1}))) == sorted(map(str, [("narrow", 3), "wide"]))
    assert sorted(map(str, m.match({"a": 39, "b": 1}))) == sorted(map(str, [("narrow", 39), "wide"]))
    assert m.match({"a": 3.75, "b": 1}) == ["wide"]
    assert m.match({"a": 2**53}) == ["edge"]
    assert m.match({"a": 2**53 + 1}) == []  # float(2**53 + 1) == 2**53, but the value is past the bound
    assert m.match({"a": "B"}) == ["strings"]
