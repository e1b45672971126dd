"""Reading a plan document (:class:`scotbed.workloads.plan.Plan`): every field checked, every error a
:class:`~scotbed.workloads.plan.PlanError` naming where, so a Locust process never starts on a
malformed plan."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from scotbed.filters import Filter, FilterError
from scotbed.loader import read_document
from scotbed.workloads.plan import (
    PLAN_VERSION,
    Action,
    BrokerEndpoint,
    Plan,
    PlanError,
    PublisherPlan,
    ReleaseSpec,
    SourceSpec,
    SubscriberPlan,
)
from scotbed.workloads.schema import get_schema


def _get(
    doc: Mapping[str, Any], key: str, where: str, kind: type | tuple[type, ...], default: Any = ...
) -> Any:
    if key not in doc:
        if default is ...:
            raise PlanError(f"{where}.{key}: required field is missing")
        return default
    v = doc[key]
    if (isinstance(v, bool) and kind is not bool) or not isinstance(v, kind):
        raise PlanError(f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, got {v!r}")
    return v


def _check_keys(doc: Any, allowed: set[str], where: str) -> None:
    if not isinstance(doc, Mapping):
        raise PlanError(f"{where}: expected an object, got {type(doc).__name__}")
    unknown = sorted(set(doc) - allowed)
    if unknown:
        raise PlanError(f"{where}: unknown field(s) {', '.join(unknown)}")


NUM = (int, float)


def load(path: str | Path) -> Plan:
    """Read a plan file; a ``.gz`` suffix means gzipped JSON (how a large plan fits a ConfigMap)."""
    p = Path(path)
    return plan_from_json(read_document(p, "plan", PlanError), str(p))


def plan_from_json(doc: Any, where: str = "plan") -> Plan:
    """The plan ``doc`` (:meth:`~scotbed.workloads.plan.Plan.to_json`'s form) describes; ``where`` names it
    in errors."""
    _check_keys(
        doc,
        {
            "schema_version", "run_id", "seed", "schema", "source", "brokers", "subscribers",
            "publishers", "release", "drain_s", "subscribe_timeout_s", "timeout_s",
        },
        where,
    )  # fmt: skip
    version = _get(doc, "schema_version", where, int)
    if version != PLAN_VERSION:
        raise PlanError(f"{where}.schema_version: {version} is not supported (expected {PLAN_VERSION})")
    schema = get_schema(_get(doc, "schema", where, str, "stock"))
    brokers = _brokers_from_json(_get(doc, "brokers", where, list), where)
    reader = _ClientReader(schema, {b.id for b in brokers})
    subscribers = [
        reader.subscriber(s, f"{where}.subscribers[{k}]")
        for k, s in enumerate(_get(doc, "subscribers", where, list))
    ]
    publishers = [
        reader.publisher(p, f"{where}.publishers[{k}]")
        for k, p in enumerate(_get(doc, "publishers", where, list))
    ]
    names = [s.name for s in subscribers] + [p.name for p in publishers]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise PlanError(f"{where}: client name(s) {dup} used twice")
    return Plan(
        run_id=_get(doc, "run_id", where, str, ""),
        seed=_get(doc, "seed", where, int, 0),
        schema=schema.name,
        source=_source_from_json(_get(doc, "source", where, dict, {}), f"{where}.source"),
        brokers=tuple(brokers),
        subscribers=tuple(subscribers),
        publishers=tuple(publishers),
        release=_release_from_json(_get(doc, "release", where, dict, {}), f"{where}.release"),
        drain_s=float(_get(doc, "drain_s", where, NUM, 2.0)),
        subscribe_timeout_s=float(_get(doc, "subscribe_timeout_s", where, NUM, 60.0)),
        timeout_s=float(_get(doc, "timeout_s", where, NUM, 3600.0)),
    )


def _source_from_json(src: Mapping[str, Any], w: str) -> SourceSpec:
    _check_keys(src, {f.name for f in fields(SourceSpec)}, w)
    source = SourceSpec(
        kind=_get(src, "kind", w, str, "gbm"),
        symbols=_get(src, "symbols", w, int, 500),
        zipf_s=float(_get(src, "zipf_s", w, NUM, 1.0)),
        seed=_get(src, "seed", w, int, 0),
        csv=tuple(_get(src, "csv", w, list, [])),
        attributes=_get(src, "attributes", w, int, 15),
        values=_get(src, "values", w, int, 3),
    )
    if source.kind not in ("gbm", "csv", "gryphon"):
        raise PlanError(f"{w}.kind: {source.kind!r} is not one of 'gbm', 'csv', 'gryphon'")
    return source


def _brokers_from_json(docs: list[Any], where: str) -> list[BrokerEndpoint]:
    brokers = []
    for k, b in enumerate(docs):
        w = f"{where}.brokers[{k}]"
        _check_keys(b, {"id", "address", "region", "cluster", "outages"}, w)
        addr = _get(b, "address", w, str)
        if ":" not in addr:
            raise PlanError(f"{w}.address: expected host:port, got {addr!r}")
        brokers.append(
            BrokerEndpoint(
                _get(b, "id", w, str),
                addr,
                _get(b, "region", w, str, ""),
                _get(b, "cluster", w, int, 0),
                _outages(_get(b, "outages", w, list, []), f"{w}.outages"),
            )
        )
    return brokers


def _outages(docs: list[Any], w: str) -> tuple[tuple[float, float], ...]:
    spans = []
    for k, o in enumerate(docs):
        numbers = isinstance(o, list) and len(o) == 2 and not any(isinstance(x, bool) for x in o)
        if not (numbers and all(isinstance(x, NUM) for x in o) and o[0] <= o[1]):
            raise PlanError(f"{w}[{k}]: expected [from_s, until_s] with from_s <= until_s, got {o!r}")
        spans.append((float(o[0]), float(o[1])))
    return tuple(spans)


def _release_from_json(rel: Mapping[str, Any], w: str) -> ReleaseSpec:
    _check_keys(rel, {"mode", "at_ns", "settle_s", "quiescence_timeout_s"}, w)
    release = ReleaseSpec(
        mode=_get(rel, "mode", w, str, "auto"),
        at_ns=_get(rel, "at_ns", w, int, 0),
        settle_s=float(_get(rel, "settle_s", w, NUM, 1.0)),
        quiescence_timeout_s=float(_get(rel, "quiescence_timeout_s", w, NUM, 60.0)),
    )
    if release.mode not in ("auto", "file", "at"):
        raise PlanError(f"{w}.mode: {release.mode!r} is not one of 'auto', 'file', 'at'")
    return release


class _ClientReader:
    """Subscribers and publishers of a plan document: broker references, filters against the schema,
    and sub_ids unique across the plan."""

    def __init__(self, schema: Any, known: set[str]) -> None:
        self.schema = schema
        self.known = known
        self.ids: set[str] = set()

    def broker_ref(self, d: Mapping[str, Any], w: str) -> str:
        bid = _get(d, "broker", w, str)
        if bid not in self.known:
            raise PlanError(f"{w}.broker: unknown broker {bid!r}; the plan has {sorted(self.known)}")
        return bid

    def filter(self, d: Any, w: str) -> Filter:
        try:
            f = Filter.from_json(d, w)
            self.schema.check_filter(f, w)
        except FilterError as e:
            raise PlanError(str(e)) from None
        return f

    def new_id(self, sid: str, w: str) -> str:
        if sid in self.ids:
            raise PlanError(f"{w}: sub_id {sid!r} is used twice")
        self.ids.add(sid)
        return sid

    def subscriber(self, s: Any, w: str) -> SubscriberPlan:
        _check_keys(s, {"name", "broker", "subscriptions", "actions"}, w)
        subs = []
        for j, d in enumerate(_get(s, "subscriptions", w, list)):
            wj = f"{w}.subscriptions[{j}]"
            _check_keys(d, {"sub_id", "filter"}, wj)
            subs.append(
                (
                    self.new_id(_get(d, "sub_id", wj, str), wj),
                    self.filter(_get(d, "filter", wj, list), f"{wj}.filter"),
                )
            )
        actions = [self.action(a, f"{w}.actions[{j}]") for j, a in enumerate(_get(s, "actions", w, list, []))]
        return SubscriberPlan(_get(s, "name", w, str), self.broker_ref(s, w), tuple(subs), tuple(actions))

    def action(self, a: Any, wj: str) -> Action:
        _check_keys(a, {"at_s", "op", "sub_id", "broker", "filter"}, wj)
        op = _get(a, "op", wj, str)
        at_s = float(_get(a, "at_s", wj, NUM))
        if op == "subscribe":
            sub_id = self.new_id(_get(a, "sub_id", wj, str), wj)
            return Action(
                at_s,
                "subscribe",
                sub_id,
                self.broker_ref(a, wj),
                self.filter(_get(a, "filter", wj, list), f"{wj}.filter"),
            )
        if op == "unsubscribe":
            return Action(at_s, "unsubscribe", _get(a, "sub_id", wj, str))
        raise PlanError(f"{wj}.op: {op!r} is not one of 'subscribe', 'unsubscribe'")

    def publisher(self, p: Any, w: str) -> PublisherPlan:
        _check_keys(p, {f.name for f in fields(PublisherPlan)}, w)
        pub = PublisherPlan(
            name=_get(p, "name", w, str),
            broker=self.broker_ref(p, w),
            count=_get(p, "count", w, int),
            rate_per_s=float(_get(p, "rate_per_s", w, NUM)),
            start_s=float(_get(p, "start_s", w, NUM, 0.0)),
            seed=_get(p, "seed", w, int, 0),
            kind=_get(p, "kind", w, str, "regular"),
            symbols=tuple(_get(p, "symbols", w, list, [])),
            batch_max=_get(p, "batch_max", w, int, 64),
            poisson=_get(p, "poisson", w, bool, False),
        )
        if pub.kind not in ("regular", "hrp"):
            raise PlanError(f"{w}.kind: {pub.kind!r} is not one of 'regular', 'hrp'")
        if pub.rate_per_s <= 0 or pub.count < 0 or pub.batch_max < 1:
            raise PlanError(f"{w}: needs rate_per_s > 0, count >= 0 and batch_max >= 1")
        if pub.kind == "hrp" and not pub.symbols:
            raise PlanError(f"{w}.symbols: an HRP needs its symbols")
        return pub
