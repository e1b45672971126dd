"""Sources of stock quotes: a seeded synthetic market and the replay of a user's CSV files.

Synthetic market: every symbol follows its own geometric Brownian motion
(per-symbol drift and volatility, per-symbol random stream), one daily quote
per draw; which symbol the next quote is for is drawn from a Zipf popularity
law (rank k has weight 1/k^s, ranks shuffled by the seed so popular symbols are
not alphabetical). A quote stream is a pure function of (market, stream seed):
the same seeds give the same quotes on every machine (``random.Random`` with
string seeds is stable across CPython versions and platforms).

CSV replay: the usual daily-quote columns ``Date,Open,High,Low,Close,Adj
Close,Volume`` with a ``Symbol`` column, or one file per symbol (the file name
is the symbol). Rows whose prices are all ``null`` (Yahoo's holidays) are
skipped; anything else malformed is an error naming the file, line and column.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import random
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Protocol

from scotbed.loader import read_text
from scotbed.workloads.schema import STOCK, Quote, Schema

EXCHANGES: tuple[str, ...] = ("NYSE", "NASDAQ", "AMEX")
EXCHANGE_WEIGHTS: tuple[float, ...] = (0.45, 0.45, 0.10)
TRADING_DAYS_PER_YEAR = 252
START_DATE = dt.date(2020, 1, 2)


class QuoteSource(Protocol):
    """What publishers and the subscription calibration draw quotes from."""

    schema: Schema

    def stream(self, seed: int) -> Iterator[Quote]:
        """An endless, deterministic sequence of quotes for one publisher."""
        ...

    def symbols(self) -> list[str]: ...


def sample(source: QuoteSource, n: int, seed: int, stream_length: int = 1000) -> list[Quote]:
    """``n`` quotes as a run's publishers would issue them: many streams of ``stream_length`` quotes.

    Short streams keep the price level where a run's publishers keep it; one
    long stream would let popular symbols drift for decades.
    """
    out: list[Quote] = []
    k = 0
    while len(out) < n:
        it = source.stream(seed * 1_000_003 + k)
        out.extend(next(it) for _ in range(min(stream_length, n - len(out))))
        k += 1
    return out


def ticker_names(n: int, seed: int) -> list[str]:
    """``n`` distinct 2-4 letter tickers, deterministic in ``seed``."""
    rng = random.Random(f"tickers:{seed}")
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n:
        length = rng.choices((2, 3, 4), weights=(1, 6, 4))[0]
        name = "".join(rng.choice(letters) for _ in range(length))
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


@dataclass(frozen=True)
class SymbolModel:
    symbol: str
    exchange: str
    price0: float  # first previous close
    drift: float  # μ per year
    volatility: float  # σ per year
    volume0: int  # typical daily volume (shares)


def _nth_business_day(n: int) -> int:
    """The ``n``-th (0-based) weekday from START_DATE, as yyyymmdd."""
    weeks, rest = divmod(n, 5)
    d = START_DATE + dt.timedelta(weeks=weeks)
    while rest or d.weekday() >= 5:
        d += dt.timedelta(days=1)
        if d.weekday() < 5:
            rest -= 1
    return d.year * 10000 + d.month * 100 + d.day


class GbmMarket:
    """A synthetic market of ``symbols`` tickers with Zipf(``zipf_s``) popularity.

    ``names`` replaces the generated tickers and ``exchange`` lists every one
    of them on one exchange (how an HRP's private market is built).
    """

    schema = STOCK

    def __init__(
        self,
        symbols: int = 500,
        seed: int = 0,
        zipf_s: float = 1.0,
        names: Sequence[str] | None = None,
        exchange: str | None = None,
    ) -> None:
        if symbols < 1:
            raise ValueError(f"a market needs at least one symbol, got {symbols}")
        if zipf_s < 0:
            raise ValueError(f"zipf_s must be >= 0, got {zipf_s}")
        self.seed = seed
        names = list(names) if names is not None else ticker_names(symbols, seed)
        if len(names) != symbols or len(set(names)) != symbols:
            raise ValueError(f"need {symbols} distinct symbol names, got {len(set(names))}")
        rng = random.Random(f"market:{seed}")
        self.models = tuple(
            SymbolModel(
                symbol=name,
                exchange=exchange or rng.choices(EXCHANGES, weights=EXCHANGE_WEIGHTS)[0],
                price0=round(min(2000.0, max(1.0, math.exp(rng.gauss(math.log(40), 0.9)))), 2),
                drift=rng.gauss(0.06, 0.15),
                volatility=rng.uniform(0.15, 0.65),
                volume0=int(math.exp(rng.gauss(math.log(1e6), 1.2))),
            )
            for name in names
        )
        ranks = list(range(1, symbols + 1))
        rng.shuffle(ranks)
        raw = [1.0 / r**zipf_s for r in ranks]
        total = sum(raw)
        self.popularity = tuple(w / total for w in raw)
        self._cum = list(accumulate(self.popularity))
        self._paths: dict[int, list[Quote]] = {}
        self._rngs: dict[int, random.Random] = {}

    def symbols(self) -> list[str]:
        return [m.symbol for m in self.models]

    def quote(self, k: int, day: int) -> Quote:
        """The quote of symbol ``k`` on trading day ``day`` (0 = the market's first day).

        One price path per symbol, shared by every stream: publishers are feeds
        of one market, and a filter's selectivity does not depend on which
        random path a particular publisher happened to draw.
        """
        path = self._paths.setdefault(k, [])
        while len(path) <= day:
            path.append(self._next_day(k, path))
        return dict(path[day])

    def _next_day(self, k: int, path: list[Quote]) -> Quote:
        m = self.models[k]
        if not path:
            self._rngs[k] = random.Random(f"gbm:{self.seed}:{k}")
        rng = self._rngs[k]
        prev = float(path[-1]["close"]) if path else m.price0
        date = _nth_business_day(len(path))
        dt_year = 1.0 / TRADING_DAYS_PER_YEAR
        sq = math.sqrt(dt_year)
        s = m.volatility
        open_ = prev * math.exp(rng.gauss(0.0, 0.2 * s * sq))
        close = open_ * math.exp((m.drift - s * s / 2) * dt_year + s * sq * rng.gauss(0.0, 1.0))
        high = max(open_, close) * math.exp(abs(rng.gauss(0.0, 0.5 * s * sq)))
        low = min(open_, close) * math.exp(-abs(rng.gauss(0.0, 0.5 * s * sq)))
        o, h, lo, c = (max(0.01, round(x, 2)) for x in (open_, high, low, close))
        change = round(c - prev, 2)
        return {
            "symbol": m.symbol,
            "exchange": m.exchange,
            "open": o,
            "high": max(h, o, c),
            "low": min(lo, o, c),
            "close": c,
            "volume": max(1, int(m.volume0 * math.exp(rng.gauss(0.0, 0.5)))),
            "change": change,
            "change_pct": round(100.0 * change / prev, 2),
            "date": date,
        }

    def stream(self, seed: int) -> Iterator[Quote]:
        """Quotes of Zipf-drawn symbols; each symbol's days advance one per quote of it in this stream."""
        pick = random.Random(f"pick:{self.seed}:{seed}")
        days: dict[int, int] = {}
        last = len(self._cum) - 1
        while True:
            k = min(bisect_right(self._cum, pick.random() * self._cum[-1]), last)
            d = days.get(k, 0)
            days[k] = d + 1
            yield self.quote(k, d)


class CsvError(ValueError):
    """A quote file that cannot be replayed; the message names the file, line and column."""


REQUIRED_COLUMNS = ("Date", "Open", "High", "Low", "Close", "Volume")
OPTIONAL_COLUMNS = ("Adj Close", "Symbol", "Exchange")
_PRICE_COLUMNS = ("Open", "High", "Low", "Close")


def _parse_date(text: str, where: str) -> int:
    try:
        d = dt.date.fromisoformat(text.strip())
    except ValueError:
        raise CsvError(f"{where}: column 'Date': {text!r} is not a date (YYYY-MM-DD)") from None
    return d.year * 10000 + d.month * 100 + d.day


def _parse_number(text: str, column: str, where: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise CsvError(f"{where}: column {column!r}: {text!r} is not a number") from None
    if not math.isfinite(x) or x < 0:
        raise CsvError(f"{where}: column {column!r}: {text!r} must be a finite number >= 0")
    return x


def _rows(p: Path, lines: list[str]) -> Iterator[list[str]]:
    """The CSV rows of ``lines``; what the csv module cannot split (a field over its size limit) is a
    :class:`CsvError` naming the line."""
    reader = csv.reader(lines)
    try:
        yield from reader
    except csv.Error as e:
        raise CsvError(f"{p}:{reader.line_num}: not CSV: {e}") from None


def read_csv(path: str | Path, default_exchange: str = "CSV") -> list[Quote]:
    """Quotes of one daily-quote CSV file, sorted by (symbol, date), with change from the previous close."""
    p = Path(path)
    text = read_text(p, "CSV", CsvError)
    reader = _rows(p, text.splitlines())
    header = next(reader, None)
    if not header:
        raise CsvError(f"{p}: empty file; expected a header {','.join(REQUIRED_COLUMNS)}")
    cols = {name.strip().lower(): i for i, name in enumerate(header)}
    missing = [c for c in REQUIRED_COLUMNS if c.lower() not in cols]
    if missing:
        raise CsvError(
            f"{p}:1: missing column(s) {', '.join(missing)}; expected "
            f"{','.join(REQUIRED_COLUMNS[:5])},Adj Close,Volume[,Symbol], got {','.join(header)}"
        )
    has_symbol = "symbol" in cols
    rows: list[tuple[str, str, int, float, float, float, float, int]] = []
    for line, row in enumerate(reader, start=2):
        if not row or all(not x.strip() for x in row):
            continue
        where = f"{p}:{line}"
        if len(row) != len(header):
            raise CsvError(f"{where}: {len(row)} fields, the header has {len(header)}")

        def field(name: str, row: list[str] = row) -> str:
            return row[cols[name.lower()]].strip()

        if all(field(c).lower() == "null" for c in _PRICE_COLUMNS):
            continue
        symbol = field("Symbol") if has_symbol else p.stem.upper()
        if not symbol:
            raise CsvError(f"{where}: column 'Symbol' is empty")
        exchange = field("Exchange") if "exchange" in cols else default_exchange
        date = _parse_date(field("Date"), where)
        o, h, lo, c = (_parse_number(field(n), n, where) for n in _PRICE_COLUMNS)
        vol = _parse_number(field("Volume"), "Volume", where)
        if vol != int(vol):
            raise CsvError(f"{where}: column 'Volume': {field('Volume')!r} is not a whole number of shares")
        if not lo <= min(o, c) <= max(o, c) <= h:
            raise CsvError(
                f"{where}: prices out of order: need Low <= Open, Close <= High, got {o=} {h=} {lo=} {c=}"
            )
        rows.append((symbol, exchange, date, o, h, lo, c, int(vol)))
    if not rows:
        raise CsvError(f"{p}: no quotes after the header")
    rows.sort(key=lambda r: (r[0], r[2]))
    out: list[Quote] = []
    prev: tuple[str, float, int] | None = None
    for symbol, exchange, date, o, h, lo, c, vol in rows:
        if prev is not None and prev[0] == symbol and prev[2] == date:
            raise CsvError(f"{p}: symbol {symbol} has two rows for date {date}")
        base = prev[1] if prev is not None and prev[0] == symbol else o
        change = round(c - base, 2)
        out.append(
            {
                "symbol": symbol,
                "exchange": exchange,
                "open": round(o, 2),
                "high": round(h, 2),
                "low": round(lo, 2),
                "close": round(c, 2),
                "volume": vol,
                "change": change,
                "change_pct": round(100.0 * change / base, 2) if base > 0 else 0.0,
                "date": date,
            }
        )
        prev = (symbol, c, date)
    return out


class CsvReplay:
    """Replays quotes from CSV files in market order (by date, then symbol), cycling at the end.

    Each stream seed starts at its own deterministic offset, so publishers
    replaying the same files issue different parts of them.
    """

    schema = STOCK

    def __init__(self, paths: Sequence[str | Path], default_exchange: str = "CSV") -> None:
        if not paths:
            raise CsvError("CSV replay needs at least one file")
        quotes: list[Quote] = []
        for path in paths:
            quotes.extend(read_csv(path, default_exchange))
        quotes.sort(key=lambda q: (q["date"], q["symbol"]))
        self.quotes = quotes

    def symbols(self) -> list[str]:
        return sorted({str(q["symbol"]) for q in self.quotes})

    def stream(self, seed: int) -> Iterator[Quote]:
        n = len(self.quotes)
        i = random.Random(f"replay:{seed}").randrange(n)
        while True:
            yield dict(self.quotes[i])
            i = (i + 1) % n
