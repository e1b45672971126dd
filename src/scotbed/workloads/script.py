"""Scripted scenarios (docs/design.md §8): the JSON Lines format, parsed and checked without any I/O.

A script replaces the generated workload with an exact list of operations,
executed in file order (:mod:`scotbed.workloads.script_runner` runs them)::

    {"op": "subscribe", "sub_id": "S", "broker": "b-v0-0", "filter": [{"attr": "x", "op": "<", "value": 9}]}
    {"op": "publish",     "pub_id": "p1", "broker": "b-v4-0", "attrs": {"x": 5}}
    {"op": "unsubscribe", "sub_id": "S"}
    {"op": "settle"}
    {"op": "sleep", "ms": 500}

Every subscribe, unsubscribe and publish is followed by an implicit settle
unless the line says ``"settle": false``. Attribute names and values are free
(strings and numbers). Decisions the contract leaves open, taken here:

- a blank line, or a line that starts with ``#``, is skipped; after a line's JSON
  object only a ``# comment`` may follow (docs/design.md §8's own example annotates lines so);
- a ``sub_id`` names one subscription for the whole run: it cannot be subscribed
  twice, not even after its unsubscription (the oracle keys episodes by sub_id);
  a ``pub_id`` is issued once;
- an unsubscription goes to the broker that hosts the subscription (its client's stream);
- each subscription is its own client, named after the sub_id; every publication's
  client is :data:`PUBLISHER`.

Every problem is a :class:`ScriptError` whose message starts with ``FILE:LINE:``
and says what is wrong there, so a spec with a bad script fails validation
(exit 2) before anything deploys. That includes what the brokers would refuse:
each subscription and publication is encoded as the client will send it and
measured by the brokers' own admission checks (:mod:`scotbed.broker.limits`,
against :class:`scotbed.config.LimitsConfig`: id bytes, filter predicates and
bytes, notification attributes and bytes), and every value must be one the wire
carries (:func:`scotbed.filters.value_problem`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from scotbed.broker.limits import Refusal, check_publish, check_subscribe
from scotbed.config import LimitsConfig
from scotbed.errors import TOO_DEEP, UserError
from scotbed.filters import Filter, FilterError, Scalar, text_problem, value_problem
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.wire import filter_to_pb, notification_to_pb

OpName = Literal["subscribe", "unsubscribe", "publish", "settle", "sleep"]
#: the keys each op accepts (``op`` itself aside); the required ones are checked per op
KEYS: dict[str, frozenset[str]] = {
    "subscribe": frozenset({"sub_id", "broker", "filter", "settle"}),
    "unsubscribe": frozenset({"sub_id", "settle"}),
    "publish": frozenset({"pub_id", "broker", "attrs", "settle"}),
    "settle": frozenset(),
    "sleep": frozenset({"ms"}),
}
#: the client name of every scripted publication
PUBLISHER = "script"
#: the send times a publication's size is measured with: the widest an int64 timestamp encodes to
_WIDEST_NS = 2**63 - 1


class ScriptError(UserError):
    """A script that cannot run: ``FILE:LINE: what is wrong``."""


@dataclass(frozen=True)
class Op:
    """One line of a script. ``broker`` of an unsubscribe is the host broker of its subscription."""

    line: int
    op: OpName
    sub_id: str = ""
    pub_id: str = ""
    broker: str = ""
    filter: Filter | None = None
    attrs: Mapping[str, Scalar] = field(default_factory=dict)
    settle: bool = True
    ms: float = 0.0

    @property
    def settles(self) -> bool:
        """Whether the brokers must be quiescent before the next line runs."""
        return self.op == "settle" or (self.op in ("subscribe", "unsubscribe", "publish") and self.settle)

    def describe(self) -> str:
        if self.op in ("subscribe", "unsubscribe"):
            return f"line {self.line}: {self.op} {self.sub_id} at {self.broker}"
        if self.op == "publish":
            return f"line {self.line}: publish {self.pub_id} at {self.broker}"
        if self.op == "sleep":
            return f"line {self.line}: sleep {self.ms:g} ms"
        return f"line {self.line}: settle"


@dataclass(frozen=True)
class Script:
    source: str
    ops: tuple[Op, ...]

    def count(self, op: str) -> int:
        return sum(1 for o in self.ops if o.op == op)

    def summary(self) -> str:
        return (
            f"script {self.source}: {len(self.ops)} operations, {self.count('subscribe')} subscribe, "
            f"{self.count('unsubscribe')} unsubscribe, {self.count('publish')} publish"
        )


def parse(
    text: str, brokers: Collection[str], source: str = "script", limits: LimitsConfig | None = None
) -> Script:
    """The script in ``text`` for an overlay with broker ids ``brokers`` whose brokers admit requests
    within ``limits`` (default: the brokers' defaults); raises :class:`ScriptError`."""
    state = _State(frozenset(brokers), source, limits or LimitsConfig())
    ops = [state.op(number, doc) for number, doc in _lines(text, source)]
    if not ops:
        raise ScriptError(f"{source}: the script has no operations")
    return Script(source, tuple(ops))


def _lines(text: str, source: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number, JSON object) of every operation line; comments and blank lines skipped."""
    decoder = json.JSONDecoder()
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source}:{number}"
        try:
            doc, end = decoder.raw_decode(line)
        except json.JSONDecodeError as e:
            raise ScriptError(f"{where}: not valid JSON: {e.msg} at column {e.colno}") from None
        except ValueError as e:  # a number of more digits than int() converts
            raise ScriptError(f"{where}: not valid JSON: {e}") from None
        except RecursionError:
            raise ScriptError(f"{where}: {TOO_DEEP}") from None
        rest = line[end:].strip()
        if rest and not rest.startswith("#"):
            raise ScriptError(f"{where}: unexpected text after the JSON object: {rest[:40]!r}")
        if not isinstance(doc, dict):
            raise ScriptError(f"{where}: a line is one JSON object, got {type(doc).__name__}")
        out.append((number, doc))
    return out


class _State:
    """What the lines so far established: live subscriptions (and their brokers), ids used."""

    def __init__(self, brokers: frozenset[str], source: str, limits: LimitsConfig) -> None:
        self.brokers = brokers
        self.source = source
        self.limits = limits
        self.live: dict[str, str] = {}  # sub_id -> host broker
        self.sub_ids: dict[str, int] = {}  # sub_id -> line of its subscribe
        self.pub_ids: dict[str, int] = {}

    def op(self, number: int, doc: dict[str, Any]) -> Op:
        where = f"{self.source}:{number}"
        name = doc.get("op")
        if name not in KEYS:
            raise ScriptError(f"{where}: unknown op {name!r}; allowed: {', '.join(KEYS)}")
        unknown = sorted(set(doc) - KEYS[name] - {"op"})
        if unknown:
            allowed = ", ".join(sorted(KEYS[name])) or "none"
            raise ScriptError(
                f"{where}: unknown key(s) {', '.join(unknown)} for op {name!r}; allowed: {allowed}"
            )
        settle = doc.get("settle", True)
        if not isinstance(settle, bool):
            raise ScriptError(f"{where}: 'settle' must be true or false, got {settle!r}")
        if name == "subscribe":
            return self._subscribe(where, number, doc, settle)
        if name == "unsubscribe":
            sub_id = self._id(where, doc, "sub_id")
            if sub_id not in self.live:
                raise ScriptError(f"{where}: unknown sub_id {sub_id!r}: {self._why_not_live(sub_id)}")
            return Op(number, "unsubscribe", sub_id=sub_id, broker=self.live.pop(sub_id), settle=settle)
        if name == "publish":
            return self._publish(where, number, doc, settle)
        if name == "sleep":
            ms = _milliseconds(doc.get("ms"))
            if ms is None:
                shown = _shown(doc.get("ms"))
                raise ScriptError(f"{where}: sleep needs 'ms', a number of milliseconds >= 0, got {shown}")
            return Op(number, "sleep", ms=ms)
        return Op(number, "settle")

    def _why_not_live(self, sub_id: str) -> str:
        if sub_id in self.sub_ids:
            return f"it was already unsubscribed (subscribed on line {self.sub_ids[sub_id]})"
        return "no earlier line subscribes it"

    def _id(self, where: str, doc: Mapping[str, Any], key: str) -> str:
        v = doc.get(key)
        if not isinstance(v, str) or not v:
            raise ScriptError(f"{where}: '{key}' must be a non-empty string, got {_shown(v)}")
        if (bad := text_problem(v)) is not None:
            raise ScriptError(f"{where}: '{key}': {bad}")
        return v

    def _admitted(self, where: str, what: str, refusal: Refusal | None) -> None:
        """Raise when a broker would refuse the request (its message names the limit)."""
        if refusal is not None:
            raise ScriptError(f"{where}: the brokers would refuse this {what}: {refusal.text}")

    def _broker(self, where: str, doc: Mapping[str, Any]) -> str:
        b = self._id(where, doc, "broker")
        if b not in self.brokers:
            shown = ", ".join(sorted(self.brokers)[:8]) + (", ..." if len(self.brokers) > 8 else "")
            raise ScriptError(f"{where}: unknown broker {b!r}; brokers are {shown}")
        return b

    def _subscribe(self, where: str, number: int, doc: Mapping[str, Any], settle: bool) -> Op:
        sub_id = self._id(where, doc, "sub_id")
        if sub_id in self.sub_ids:
            raise ScriptError(
                f"{where}: sub_id {sub_id!r} is already used on line {self.sub_ids[sub_id]}; "
                "a sub_id names one subscription for the whole run"
            )
        broker = self._broker(where, doc)
        if "filter" not in doc:
            raise ScriptError(f"{where}: subscribe needs 'filter', a list of predicates")
        try:
            flt = Filter.from_json(doc["filter"])
        except FilterError as e:
            raise ScriptError(f"{where}: bad filter: {e}") from None
        req = pb.SubscribeRequest(sub_id=sub_id, subscriber=sub_id, filter=filter_to_pb(flt))
        self._admitted(where, "subscription", check_subscribe(req, self.limits))
        self.sub_ids[sub_id] = number
        self.live[sub_id] = broker
        return Op(number, "subscribe", sub_id=sub_id, broker=broker, filter=flt, settle=settle)

    def _publish(self, where: str, number: int, doc: Mapping[str, Any], settle: bool) -> Op:
        pub_id = self._id(where, doc, "pub_id")
        if pub_id in self.pub_ids:
            raise ScriptError(
                f"{where}: pub_id {pub_id!r} is already published on line {self.pub_ids[pub_id]}"
            )
        broker = self._broker(where, doc)
        attrs = doc.get("attrs")
        if not isinstance(attrs, dict):
            raise ScriptError(f"{where}: publish needs 'attrs', an object of attribute values")
        for k, v in attrs.items():
            if (bad := "it is empty" if not k else text_problem(k)) is not None:
                raise ScriptError(f"{where}: attrs: an attribute name: {bad}")
            if (bad := value_problem(v)) is not None:
                raise ScriptError(
                    f"{where}: attrs.{k}: {bad} (an attribute value is a string, a 64-bit integer "
                    "or a finite number)"
                )
        n = notification_to_pb(pub_id, PUBLISHER, attrs, _WIDEST_NS, _WIDEST_NS)
        self._admitted(where, "publication", check_publish(pb.PublishRequest(notifications=[n]), self.limits))
        self.pub_ids[pub_id] = number
        return Op(number, "publish", pub_id=pub_id, broker=broker, attrs=dict(attrs), settle=settle)


def _milliseconds(v: Any) -> float | None:
    """``v`` as a number of milliseconds >= 0, or None (also for an integer beyond float's range)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        ms = float(v)
    except OverflowError:
        return None
    return ms if math.isfinite(ms) and ms >= 0 else None


def _shown(v: Any) -> str:
    """``v`` for a message, an integer too long to print in full by its size."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 64:
        return f"an integer of {v.bit_length()} bits"
    return repr(v)[:80]
