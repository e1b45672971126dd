"""Content-based filter model shared by brokers, workloads and the analysis.

A *filter* is a conjunction of predicates over a notification's typed
attributes (docs/design.md §5). Semantics, identical everywhere they are evaluated:

- an attribute a filter does not name is unconstrained;
- a predicate on an attribute the notification lacks is false (``exists``
  included: it is true exactly when the attribute is present);
- numbers (int and float) compare numerically with each other; a string never
  equals or orders against a number: such a predicate is false, except ``!=``,
  which is true when the types differ (the values are different);
- ``between`` is inclusive at both ends; ``prefix`` applies to strings only.

JSON form: ``[{"attr": "price", "op": "<", "value": 120}, ...]``.
Text form: ``symbol = "IBM" and price between [100, 120] and volume exists``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scotbed.errors import UserError

Scalar = str | int | float
Attributes = Mapping[str, Scalar]

OPS: tuple[str, ...] = ("=", "!=", "<", "<=", ">", ">=", "between", "prefix", "exists")
#: the integers an attribute or filter value may hold: the wire's ``Value.i`` is a ``sint64``
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
ORDER_OPS = frozenset({"<", "<=", ">", ">="})


class FilterError(UserError):
    """A filter that is malformed; the message names the predicate and what is wrong."""


class FilterSyntaxError(FilterError):
    """Text syntax error; ``column`` is 1-based in the source text."""

    def __init__(self, message: str, text: str, column: int) -> None:
        pointer = " " * (column - 1) + "^"
        super().__init__(f"{message} at column {column}\n  {text}\n  {pointer}")
        self.text = text
        self.column = column


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def text_problem(s: str) -> str | None:
    """Why ``s`` cannot be sent as UTF-8 (a lone surrogate, which JSON's ``\\udc80`` can spell), or None."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"{s[:40]!r} is not UTF-8 text (a lone surrogate at index {e.start})"
    return None


def value_problem(v: object) -> str | None:
    """Why ``v`` is not an attribute value the wire carries (UTF-8 text, an integer in
    [:data:`INT_MIN`, :data:`INT_MAX`], a finite float), or None."""
    if isinstance(v, str):
        return text_problem(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return f"{v!r} is not a string or a number"
    if isinstance(v, int):
        if INT_MIN <= v <= INT_MAX:
            return None
        shown = str(v) if v.bit_length() <= 128 else f"an integer of {v.bit_length()} bits"
        return f"{shown} is outside the 64-bit integers [-2**63, 2**63 - 1] the wire carries"
    return None if math.isfinite(v) else f"{v!r} is not a finite number"


@dataclass(frozen=True, slots=True)
class Predicate:
    """One constraint ``attr op value``; ``value`` is a pair for ``between``, None for ``exists``."""

    attr: str
    op: str
    value: Any = None

    def __post_init__(self) -> None:
        where = f"predicate on {self.attr!r}"
        if not isinstance(self.attr, str) or not self.attr:
            raise FilterError(f"predicate attribute must be a non-empty string, got {self.attr!r}")
        if (bad := text_problem(self.attr)) is not None:
            raise FilterError(f"predicate attribute: {bad}")
        if self.op not in OPS:
            raise FilterError(f"{where}: unknown op {self.op!r}; allowed: {', '.join(OPS)}")
        if self.op == "exists":
            if self.value is not None:
                raise FilterError(f"{where}: 'exists' takes no value, got {self.value!r}")
        elif self.op == "between":
            v = self.value
            if (
                not isinstance(v, (list, tuple))
                or len(v) != 2
                or not all(_is_number(x) or isinstance(x, str) for x in v)
                or _is_number(v[0]) != _is_number(v[1])
            ):
                raise FilterError(f"{where}: 'between' needs [lo, hi] of one type, got {v!r}")
            if any(isinstance(x, float) and not math.isfinite(x) for x in v):
                raise FilterError(f"{where}: bounds must be finite numbers, got {list(v)!r}")
            if v[0] > v[1]:
                raise FilterError(f"{where}: 'between' needs lo <= hi, got {list(v)!r}")
            object.__setattr__(self, "value", (v[0], v[1]))
        elif self.op == "prefix":
            if not isinstance(self.value, str):
                raise FilterError(f"{where}: 'prefix' needs a string, got {self.value!r}")
        else:
            if not (_is_number(self.value) or isinstance(self.value, str)):
                raise FilterError(f"{where}: {self.op!r} needs a string or number, got {self.value!r}")
            if isinstance(self.value, float) and math.isnan(self.value):
                raise FilterError(f"{where}: NaN is not a comparable value")
            if isinstance(self.value, float) and math.isinf(self.value):
                raise FilterError(
                    f"{where}: {self.value!r} is not a finite number (the text form cannot say it)"
                )
        self._check_range(where)

    def _check_range(self, where: str) -> None:
        """Every value is one the wire carries (see :func:`value_problem`)."""
        values = self.value if self.op == "between" else () if self.op == "exists" else (self.value,)
        for v in values:
            if (bad := value_problem(v)) is not None:
                raise FilterError(f"{where}: {bad}")

    def matches(self, attrs: Attributes) -> bool:
        if self.attr not in attrs:
            return False
        x = attrs[self.attr]
        op = self.op
        if op == "exists":
            return True
        if op == "prefix":
            return isinstance(x, str) and x.startswith(self.value)
        if op == "between":
            lo, hi = self.value
            return _is_number(x) == _is_number(lo) and lo <= x <= hi
        v = self.value
        same_kind = _is_number(x) == _is_number(v)
        if op == "=":
            return same_kind and x == v
        if op == "!=":
            return not same_kind or x != v
        if not same_kind:
            return False
        if op == "<":
            return x < v
        if op == "<=":
            return x <= v
        if op == ">":
            return x > v
        return x >= v

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"attr": self.attr, "op": self.op}
        if self.op == "between":
            d["value"] = list(self.value)
        elif self.op != "exists":
            d["value"] = self.value
        return d

    def to_text(self) -> str:
        if self.op == "exists":
            return f"{self.attr} exists"
        if self.op == "between":
            lo, hi = self.value
            return f"{self.attr} between [{_lit(lo)}, {_lit(hi)}]"
        return f"{self.attr} {self.op} {_lit(self.value)}"


def _lit(v: Scalar) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(v)


@dataclass(frozen=True, slots=True)
class Filter:
    """A conjunction of predicates; the empty filter matches every notification."""

    predicates: tuple[Predicate, ...] = ()

    def matches(self, attrs: Attributes) -> bool:
        return all(p.matches(attrs) for p in self.predicates)

    def covers(self, other: Filter) -> bool:
        """True when every notification matching ``other`` matches ``self`` (see :func:`covers`)."""
        return covers(self, other)

    def attributes(self) -> frozenset[str]:
        return frozenset(p.attr for p in self.predicates)

    def to_json(self) -> list[dict[str, Any]]:
        return [p.to_json() for p in self.predicates]

    @classmethod
    def from_json(cls, data: Sequence[Mapping[str, Any]], where: str = "filter") -> Filter:
        if not isinstance(data, (list, tuple)):
            raise FilterError(f"{where}: a filter is a list of predicates, got {type(data).__name__}")
        preds = []
        for i, item in enumerate(data):
            if not isinstance(item, Mapping):
                raise FilterError(f"{where}[{i}]: a predicate is an object, got {item!r}")
            unknown = set(item) - {"attr", "op", "value"}
            if unknown:
                raise FilterError(f"{where}[{i}]: unknown key(s) {sorted(unknown)}")
            if "attr" not in item or "op" not in item:
                raise FilterError(f"{where}[{i}]: a predicate needs 'attr' and 'op'")
            try:
                preds.append(Predicate(item["attr"], item["op"], item.get("value")))
            except FilterError as e:
                raise FilterError(f"{where}[{i}]: {e}") from None
        return cls(tuple(preds))

    def to_text(self) -> str:
        return " and ".join(p.to_text() for p in self.predicates)

    @classmethod
    def parse(cls, text: str) -> Filter:
        return _Parser(text).parse()

    def check_attributes(self, known: Iterable[str], where: str = "filter") -> None:
        """Raise if the filter names an attribute outside ``known`` (a schema's attributes)."""
        known_set = set(known)
        for i, p in enumerate(self.predicates):
            if p.attr not in known_set:
                raise FilterError(
                    f"{where}[{i}]: unknown attribute {p.attr!r}; known: {', '.join(sorted(known_set))}"
                )


# --- covering ----------------------------------------------------------------------------
#
# ``covers(a, b)``: every notification that matches ``b`` matches ``a``. The test is syntactic and
# *sound*: it never claims a covering that does not hold (a property test checks it against sampled
# notifications); it is complete for filters with at most one predicate per attribute and the
# interval/equality/prefix/exists predicates the workload generator builds.

_INF = float("inf")


def _interval(p: Predicate) -> tuple[object, bool, object, bool] | None:
    """(lo, lo_closed, hi, hi_closed) for an interval predicate; None for others."""
    v = p.value
    if p.op == "=":
        return (v, True, v, True)
    if p.op == "between":
        return (v[0], True, v[1], True)
    if not _is_number(v):
        return None
    if p.op == "<":
        return (-_INF, False, v, False)
    if p.op == "<=":
        return (-_INF, False, v, True)
    if p.op == ">":
        return (v, False, _INF, False)
    if p.op == ">=":
        return (v, True, _INF, False)
    return None


def _same_kind(x: object, y: object) -> bool:
    return _is_number(x) == _is_number(y) or x in (-_INF, _INF) or y in (-_INF, _INF)


def implies(q: Predicate, p: Predicate) -> bool:
    """True when every attribute value that satisfies ``q`` satisfies ``p`` (same attribute)."""
    if q.attr != p.attr:
        return False
    if p.op == "exists":
        return True
    if q == p:
        return True
    if p.op == "prefix":
        if q.op == "prefix":
            return bool(q.value.startswith(p.value))
        return q.op == "=" and isinstance(q.value, str) and q.value.startswith(p.value)
    if p.op == "!=":
        iq = _interval(q)
        if iq is None:
            return q.op == "prefix" and (not isinstance(p.value, str) or not p.value.startswith(q.value))
        lo, lo_c, hi, hi_c = iq
        if not _same_kind(lo, p.value):
            return True
        return bool(
            p.value < lo or p.value > hi or (p.value == lo and not lo_c) or (p.value == hi and not hi_c)
        )
    ip, iq = _interval(p), _interval(q)
    if ip is None or iq is None:
        return False
    plo, plo_c, phi, phi_c = ip
    qlo, qlo_c, qhi, qhi_c = iq
    if not (_same_kind(plo, qlo) and _same_kind(phi, qhi) and _same_kind(plo, qhi)):
        return False
    lo_ok = plo < qlo or (plo == qlo and (plo_c or not qlo_c))  # type: ignore[operator]
    hi_ok = qhi < phi or (qhi == phi and (phi_c or not qhi_c))  # type: ignore[operator]
    return bool(lo_ok and hi_ok)


def covers(a: Filter, b: Filter) -> bool:
    """True when ``a`` covers ``b``: each predicate of ``a`` is implied by a predicate of ``b``."""
    return all(any(implies(q, p) for q in b.predicates if q.attr == p.attr) for p in a.predicates)


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<num>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
      | (?P<str>"(?:[^"\\]|\\.)*")
      | (?P<op>!=|<=|>=|=|<|>)
      | (?P<punct>[\[\],])
      | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
    )""",
    re.VERBOSE,
)


class _Parser:
    """Recursive-descent parser for ``pred (and pred)*``; errors carry a column."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = list(self._lex())
        self.i = 0

    def _lex(self) -> Iterator[tuple[str, str, int]]:
        pos = 0
        text = self.text
        while pos < len(text):
            if text[pos:].strip() == "":
                return
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                col = pos + 1 + (len(text[pos:]) - len(text[pos:].lstrip()))
                raise FilterSyntaxError("unexpected character", text, col)
            kind = m.lastgroup or ""
            value = m.group(kind)
            yield kind, value, m.start(kind) + 1
            pos = m.end()

    def _peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def _next(self, expected: str) -> tuple[str, str, int]:
        tok = self._peek()
        if tok is None:
            raise FilterSyntaxError(f"expected {expected}, found end of text", self.text, len(self.text) + 1)
        self.i += 1
        return tok

    def _value(self) -> Scalar:
        kind, value, col = self._next("a value")
        if kind == "num":
            return float(value) if any(c in value for c in ".eE") else int(value)
        if kind == "str":
            return re.sub(r"\\(.)", r"\1", value[1:-1])
        raise FilterSyntaxError(f"expected a number or a quoted string, found {value!r}", self.text, col)

    def _punct(self, ch: str) -> None:
        _, value, col = self._next(repr(ch))
        if value != ch:
            raise FilterSyntaxError(f"expected {ch!r}, found {value!r}", self.text, col)

    def _predicate(self) -> Predicate:
        kind, attr, col = self._next("an attribute name")
        if kind != "word" or attr in ("and", "between", "prefix", "exists"):
            raise FilterSyntaxError(f"expected an attribute name, found {attr!r}", self.text, col)
        kind, op, opcol = self._next("an operator")
        try:
            if kind == "op":
                return Predicate(attr, op, self._value())
            if kind == "word" and op == "exists":
                return Predicate(attr, "exists")
            if kind == "word" and op == "prefix":
                return Predicate(attr, "prefix", self._value())
            if kind == "word" and op == "between":
                self._punct("[")
                lo = self._value()
                self._punct(",")
                hi = self._value()
                self._punct("]")
                return Predicate(attr, "between", (lo, hi))
        except FilterSyntaxError:
            raise
        except FilterError as e:
            raise FilterSyntaxError(str(e), self.text, col) from None
        raise FilterSyntaxError(f"expected an operator ({', '.join(OPS)}), found {op!r}", self.text, opcol)

    def parse(self) -> Filter:
        if not self.tokens:
            return Filter(())
        preds = [self._predicate()]
        while (tok := self._peek()) is not None:
            kind, value, col = tok
            if kind != "word" or value != "and":
                raise FilterSyntaxError(f"expected 'and', found {value!r}", self.text, col)
            self.i += 1
            preds.append(self._predicate())
        return Filter(tuple(preds))
