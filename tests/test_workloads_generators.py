"""Quote sources, calibrated subscriptions, covering mode (issue 5)."""

from __future__ import annotations

import itertools
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scotbed.filters import Filter, FilterError, Predicate
from scotbed.workloads.covering import covering_degree, covers, new_roots
from scotbed.workloads.quotes import CsvError, CsvReplay, GbmMarket, read_csv, sample
from scotbed.workloads.schema import STOCK
from scotbed.workloads.subscriptions import generate, generate_covering, selectivity


@pytest.fixture(scope="module")
def market() -> GbmMarket:
    return GbmMarket(500, seed=1)


@pytest.fixture(scope="module")
def test_quotes(market: GbmMarket) -> list[dict]:
    return sample(market, 10_000, seed=424242)


def test_stock_schema_has_ten_typed_attributes(market: GbmMarket) -> None:
    assert len(STOCK.names) == 10
    quotes = sample(market, 2000, seed=3)
    for q in quotes:
        STOCK.check_quote(q)
        assert q["low"] <= min(q["open"], q["close"]) <= max(q["open"], q["close"]) <= q["high"]
    assert len(market.symbols()) == len(set(market.symbols())) == 500


def test_zipf_popularity_orders_symbol_frequencies(market: GbmMarket) -> None:
    quotes = sample(market, 30_000, seed=5)
    by_pop = sorted(range(500), key=lambda k: -market.popularity[k])
    count = {s: 0 for s in market.symbols()}
    for q in quotes:
        count[str(q["symbol"])] += 1
    top, rank10 = market.models[by_pop[0]].symbol, market.models[by_pop[9]].symbol
    assert count[top] / len(quotes) == pytest.approx(market.popularity[by_pop[0]], rel=0.1)
    assert count[top] > 5 * count[rank10]  # 1/1 vs 1/10 under Zipf(1)


def test_a_symbol_walks_one_shared_gbm_path(market: GbmMarket) -> None:
    k = max(range(500), key=lambda i: market.popularity[i])
    for stream in (1, 2):
        it = market.stream(stream)
        a = [q for q in (next(it) for _ in range(1000)) if q["symbol"] == market.symbols()[k]]
        assert a == [market.quote(k, d) for d in range(len(a))]
    assert [q["date"] for q in a[:3]] == [20200102, 20200103, 20200106]
    for prev, q in itertools.pairwise(a):
        assert q["change"] == pytest.approx(q["close"] - prev["close"], abs=0.011)


def test_same_seed_same_stream_other_seed_other_stream() -> None:
    def first(seed: int, stream: int) -> list[dict]:
        it = GbmMarket(50, seed=seed).stream(stream)
        return [next(it) for _ in range(200)]

    assert first(1, 2) == first(1, 2)
    assert first(1, 2) != first(1, 3)
    assert first(1, 2) != first(2, 2)


@pytest.mark.slow
@pytest.mark.parametrize("target", [0.01, 0.02])
def test_subscriptions_hit_target_selectivity(
    market: GbmMarket, test_quotes: list[dict], target: float
) -> None:
    filters = generate(market, 100, target, seed=11)
    sels = [selectivity(f, test_quotes) for f in filters]
    within = [abs(s - target) / target <= 0.25 for s in sels]
    assert statistics.mean(sels) == pytest.approx(target, rel=0.1)
    assert sum(within) / len(within) >= 0.95, sorted(sels)[:10]
    assert len({f.to_text() for f in filters}) > 80  # diverse, not one filter repeated
    for f in filters:
        STOCK.check_filter(f)


def test_subscriptions_are_deterministic_in_the_seed(market: GbmMarket) -> None:
    a = [f.to_json() for f in generate(market, 30, 0.02, seed=3)]
    assert a == [f.to_json() for f in generate(market, 30, 0.02, seed=3)]
    assert a != [f.to_json() for f in generate(market, 30, 0.02, seed=4)]


@pytest.mark.slow
@pytest.mark.parametrize(("n", "degree"), [(310, 30), (100, 4)])
def test_covering_mode_reaches_the_degree(market: GbmMarket, n: int, degree: int) -> None:
    cs = generate_covering(market, n, degree, 0.02, seed=9)
    assert covering_degree(cs.filters) == pytest.approx(degree)
    nrs = new_roots(cs.filters)
    assert sorted(nrs) == cs.roots
    for r, kids in nrs.items():
        assert kids == [i for i, p in enumerate(cs.parent) if p == r]


@pytest.mark.slow
def test_covering_children_have_the_target_selectivity(market: GbmMarket, test_quotes: list[dict]) -> None:
    cs = generate_covering(market, 62, 30, 0.02, seed=2)
    kids = [f for f, p in zip(cs.filters, cs.parent, strict=True) if p is not None]
    assert statistics.mean(selectivity(f, test_quotes) for f in kids) == pytest.approx(0.02, rel=0.15)


def test_covering_mode_rejects_impossible_degrees(market: GbmMarket) -> None:
    with pytest.raises(ValueError, match="cannot have that selectivity"):
        generate_covering(market, 100, 50, 0.02)


def test_covers_on_intervals_equality_prefix_exists() -> None:
    P = Filter.parse
    assert covers(P("close between [10, 20]"), P("close between [12, 15] and volume > 5"))
    assert not covers(P("close between [12, 15]"), P("close between [10, 20]"))
    assert covers(P("close > 5"), P("close between [6, 7]"))
    assert not covers(P("close > 6"), P("close between [6, 7]"))
    assert covers(P("close >= 6"), P("close between [6, 7]"))
    assert covers(P('symbol prefix "AB"'), P('symbol = "ABC"'))
    assert covers(P('symbol prefix "A"'), P('symbol prefix "AB"'))
    assert not covers(P('symbol prefix "AB"'), P('symbol prefix "A"'))
    assert covers(P("volume exists"), P("volume < 3"))
    assert covers(P("close != 3"), P("close between [4, 9]"))
    assert not covers(P("close != 5"), P("close between [4, 9]"))
    assert covers(P(""), P("close = 1"))
    assert not covers(P("close = 1"), P(""))
    assert not covers(P('symbol = "A"'), P("symbol = 1"))


_pred = st.one_of(
    st.builds(lambda a, op, v: Predicate(a, op, v), st.sampled_from(["x", "y"]),
              st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), st.integers(0, 6)),
    st.builds(lambda a, lo, d: Predicate(a, "between", (lo, lo + d)), st.sampled_from(["x", "y"]),
              st.integers(0, 6), st.integers(0, 3)),
    st.builds(lambda a: Predicate(a, "exists"), st.sampled_from(["x", "y"])),
)  # fmt: skip
_filter = st.lists(_pred, max_size=3).map(lambda ps: Filter(tuple(ps)))


@settings(max_examples=300, deadline=None)
@given(_filter, _filter)
def test_covers_is_sound(a: Filter, b: Filter) -> None:
    """Whenever covers(a, b), every point matching b matches a (exhaustively over a small grid)."""
    if covers(a, b):
        for x in [*range(-1, 8), None]:
            for y in [*range(-1, 8), None]:
                attrs = {k: v for k, v in (("x", x), ("y", y)) if v is not None}
                assert not b.matches(attrs) or a.matches(attrs)


def test_unknown_attribute_in_a_filter_is_named() -> None:
    with pytest.raises(FilterError, match=r"unknown attribute 'price'; known: change, change_pct, close"):
        STOCK.check_filter(Filter.parse("price < 120"), "subscription")
    with pytest.raises(FilterError, match=r"attribute 'close' is a number, got value 'cheap'"):
        STOCK.check_filter(Filter.parse('close = "cheap"'))
    with pytest.raises(FilterError, match=r"'prefix' on numeric attribute 'volume'"):
        STOCK.check_filter(Filter.parse('volume prefix "1"'))


GOOD = """Date,Open,High,Low,Close,Adj Close,Volume,Symbol
2021-01-04,10.0,11.0,9.5,10.5,10.5,1000,AAA
2021-01-05,null,null,null,null,null,null,AAA
2021-01-06,10.5,12.0,10.0,11.5,11.5,1200,AAA
2021-01-04,20.0,21.0,19.0,20.0,20.0,500,BBB
"""


def test_csv_replay_with_symbol_column_and_one_file_per_symbol(tmp_path) -> None:
    f = tmp_path / "quotes.csv"
    f.write_text(GOOD)
    quotes = read_csv(f)
    assert [(q["symbol"], q["date"]) for q in quotes] == [
        ("AAA", 20210104),
        ("AAA", 20210106),
        ("BBB", 20210104),
    ]
    assert quotes[1]["change"] == 1.0 and quotes[1]["change_pct"] == pytest.approx(9.52)
    for q in quotes:
        STOCK.check_quote(q)
    ibm = tmp_path / "ibm.csv"
    ibm.write_text("Date,Open,High,Low,Close,Adj Close,Volume\n2021-01-04,1,2,1,2,2,10\n")
    replay = CsvReplay([f, ibm])
    assert replay.symbols() == ["AAA", "BBB", "IBM"]
    it = replay.stream(0)
    assert len([next(it) for _ in range(8)]) == 8  # cycles


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Date,Open,High,Close,Volume\n", r"quotes.csv:1: missing column\(s\) Low; expected Date,Open"),
        ("Date,Open,High,Low,Close,Adj Close,Volume\n2021-01-04,1,2,1,abc,2,10\n",
         r"quotes.csv:2: column 'Close': 'abc' is not a number"),
        ("Date,Open,High,Low,Close,Adj Close,Volume\n04/01/2021,1,2,1,2,2,10\n",
         r"quotes.csv:2: column 'Date': '04/01/2021' is not a date \(YYYY-MM-DD\)"),
        ("Date,Open,High,Low,Close,Adj Close,Volume\n2021-01-04,1,2,1.5,2,2,10\n",
         r"quotes.csv:2: prices out of order"),
        ("Date,Open,High,Low,Close,Adj Close,Volume\n2021-01-04,1,2,1,2,2\n",
         r"quotes.csv:2: 6 fields, the header has 7"),
        ("", r"quotes.csv: empty file"),
        ("Date,Open,High,Low,Close,Adj Close,Volume\n", r"quotes.csv: no quotes after the header"),
    ],
)  # fmt: skip
def test_malformed_csv_is_reported_with_file_line_and_column(tmp_path, text: str, message: str) -> None:
    f = tmp_path / "quotes.csv"
    f.write_text(text)
    with pytest.raises(CsvError, match=message):
        read_csv(f)
