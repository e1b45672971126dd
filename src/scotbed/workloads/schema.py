"""Notification schemas: the typed attributes a workload's notifications carry.

The stock schema follows the evaluations scotbed reproduces (OctopiS: 500
symbols, 10 attributes per quote): one daily quote of one symbol, named the
way a market-data user names the fields. Filters are checked against a schema
before a workload uses them, so a typo in an attribute name fails at plan time
with the attribute named, not silently as a subscription that matches nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from scotbed.filters import Filter, FilterError, Scalar

AttrType = Literal["string", "int", "float"]
Quote = dict[str, Scalar]


@dataclass(frozen=True)
class Attribute:
    name: str
    type: AttrType
    doc: str


@dataclass(frozen=True)
class Schema:
    name: str
    attributes: tuple[Attribute, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    def attribute(self, name: str) -> Attribute:
        for a in self.attributes:
            if a.name == name:
                return a
        raise KeyError(name)

    def check_filter(self, flt: Filter, where: str = "filter") -> None:
        """Raise :class:`FilterError` if ``flt`` names an unknown attribute or compares across types.

        A numeric attribute compared with a string (or ``prefix`` on a number)
        is legal filter syntax but can never match; in a generated or user-given
        workload it is always a mistake, so it is rejected here.
        """
        flt.check_attributes(self.names, where)
        for i, p in enumerate(flt.predicates):
            numeric = self.attribute(p.attr).type != "string"
            if p.op == "exists":
                continue
            if p.op == "prefix" and numeric:
                raise FilterError(f"{where}[{i}]: 'prefix' on numeric attribute {p.attr!r}")
            values = p.value if p.op == "between" else (p.value,)
            for v in values:
                if isinstance(v, str) == numeric:
                    kind = "a number" if numeric else "a string"
                    raise FilterError(f"{where}[{i}]: attribute {p.attr!r} is {kind}, got value {v!r}")

    def check_quote(self, quote: Mapping[str, Scalar], where: str = "quote") -> None:
        """Raise ValueError unless ``quote`` has exactly this schema's attributes with their types."""
        missing = [n for n in self.names if n not in quote]
        extra = sorted(set(quote) - set(self.names))
        if missing or extra:
            raise ValueError(f"{where}: missing {missing} / unknown {extra} attribute(s)")
        for a in self.attributes:
            v = quote[a.name]
            allowed = {"string": (str,), "int": (int,), "float": (int, float)}[a.type]
            if not isinstance(v, allowed) or isinstance(v, bool):
                raise ValueError(f"{where}: attribute {a.name!r} must be {a.type}, got {v!r}")


STOCK = Schema(
    "stock",
    (
        Attribute("symbol", "string", "ticker symbol, e.g. 'IBM'"),
        Attribute("exchange", "string", "listing exchange: NYSE, NASDAQ or AMEX"),
        Attribute("open", "float", "opening price of the day (currency units, 2 decimals)"),
        Attribute("high", "float", "highest price of the day"),
        Attribute("low", "float", "lowest price of the day"),
        Attribute("close", "float", "closing price of the day"),
        Attribute("volume", "int", "shares traded during the day"),
        Attribute("change", "float", "close minus the previous day's close"),
        Attribute("change_pct", "float", "change as a percentage of the previous close (2 decimals)"),
        Attribute("date", "int", "trading day as yyyymmdd"),
    ),
)

GRYPHON_MAX_ATTRIBUTES = 64
GRYPHON = Schema(
    "gryphon",
    tuple(
        Attribute(f"a{i}", "int", "enumerated value 0..V-1 (scotbed.workloads.gryphon)")
        for i in range(GRYPHON_MAX_ATTRIBUTES)
    ),
)

SCHEMAS: dict[str, Schema] = {STOCK.name: STOCK, GRYPHON.name: GRYPHON}


def get_schema(name: str) -> Schema:
    try:
        return SCHEMAS[name]
    except KeyError:
        raise ValueError(f"unknown workload schema {name!r}; known: {', '.join(SCHEMAS)}") from None
