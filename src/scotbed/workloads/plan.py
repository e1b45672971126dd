"""The workload plan: the one JSON file the orchestrator writes and every Locust process reads.

A plan fixes everything a run issues, so two runs of one plan issue the same
subscriptions and the same quotes (only timing differs). Contents
(``schema_version`` 1; times in seconds unless the name says ``_ns``):

- ``brokers``: id -> gRPC address, region and cluster of every broker a client uses;
- ``source``: the quote source (``gbm`` market of ``symbols`` with ``zipf_s``, or ``csv`` replay
  of ``csv`` files) and its ``seed``;
- ``subscribers``: name, host broker, initial subscriptions (``sub_id`` + filter in JSON form),
  and ``actions``: churn and bursts as ``{"at_s", "op", "sub_id", "broker", "filter"}``;
- ``publishers``: name, host broker, ``count`` quotes at ``rate_per_s`` from ``start_s``,
  stream ``seed``, ``kind`` (``regular`` or ``hrp``) and, for an HRP, its private ``symbols``;
- ``release``: when publishers start (see :mod:`scotbed.workloads.runner`);
- ``drain_s``: how long the run waits after the last publication and action before it ends.

Times ``at_s`` and ``start_s`` count from the *release* instant t0; initial
subscriptions are issued before it. Ids are ``sub-<subscriber>-<k>`` and
``pub-<publisher>-<i>``: unique across the run and derived from the plan alone.
Output goes under the run directory (``events/``, ``workload/``, ``locust/``, DESIGN §5).
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from scotbed.filters import Filter, FilterError
from scotbed.topology import Scot, placement
from scotbed.workloads.covering import new_roots
from scotbed.workloads.quotes import CsvReplay, GbmMarket, QuoteSource
from scotbed.workloads.schema import get_schema
from scotbed.workloads.subscriptions import Calibration, calibration_sample, generate, generate_covering

PLAN_VERSION = 1
HRP_SYMBOL = "_HRP{}"  # outside every market's tickers, so only interested subscribers match it
HRP_EXCHANGE = "HRP"


class PlanError(ValueError):
    """A plan or workload section that cannot run; the message names the field."""


@dataclass(frozen=True)
class BrokerEndpoint:
    id: str
    address: str  # host:port of the broker's gRPC server
    region: str = ""
    cluster: int = 0


@dataclass(frozen=True)
class Action:
    at_s: float  # seconds after release
    op: Literal["subscribe", "unsubscribe"]
    sub_id: str
    broker: str = ""  # subscribe: where (a mobile subscriber moves)
    filter: Filter | None = None  # subscribe: what


@dataclass(frozen=True)
class SubscriberPlan:
    name: str
    broker: str
    subscriptions: tuple[tuple[str, Filter], ...]  # (sub_id, filter), issued before release
    actions: tuple[Action, ...] = ()


@dataclass(frozen=True)
class PublisherPlan:
    name: str
    broker: str
    count: int
    rate_per_s: float
    start_s: float = 0.0
    seed: int = 0
    kind: Literal["regular", "hrp"] = "regular"
    symbols: tuple[str, ...] = ()  # hrp: its private tickers
    batch_max: int = 64  # most notifications one Publish call carries when the schedule is behind

    def intended_offset_ns(self, i: int) -> int:
        """When quote ``i`` is due, after release: start + i / rate (the open-loop schedule)."""
        return int(self.start_s * 1e9) + int(i * 1e9 / self.rate_per_s)


@dataclass(frozen=True)
class SourceSpec:
    kind: Literal["gbm", "csv"] = "gbm"
    symbols: int = 500
    zipf_s: float = 1.0
    seed: int = 0
    csv: tuple[str, ...] = ()

    def build(self) -> QuoteSource:
        if self.kind == "csv":
            return CsvReplay(self.csv)
        return GbmMarket(self.symbols, seed=self.seed, zipf_s=self.zipf_s)


@dataclass(frozen=True)
class ReleaseSpec:
    """When publishers start: ``auto`` (master: all subscribed + brokers quiescent + settle),
    ``file`` (the ``locust/release`` file appears), ``at`` (wall clock ``at_ns``)."""

    mode: Literal["auto", "file", "at"] = "auto"
    at_ns: int = 0
    settle_s: float = 1.0
    quiescence_timeout_s: float = 60.0


@dataclass(frozen=True)
class Plan:
    run_id: str
    seed: int
    schema: str
    source: SourceSpec
    brokers: tuple[BrokerEndpoint, ...]
    subscribers: tuple[SubscriberPlan, ...]
    publishers: tuple[PublisherPlan, ...]
    release: ReleaseSpec = field(default_factory=ReleaseSpec)
    drain_s: float = 2.0
    subscribe_timeout_s: float = 60.0  # longest wait for every initial subscription's ack
    timeout_s: float = 3600.0  # hard stop of the whole workload
    schema_version: int = PLAN_VERSION

    def broker(self, bid: str) -> BrokerEndpoint:
        for b in self.brokers:
            if b.id == bid:
                return b
        raise KeyError(bid)

    def sources(self) -> dict[str, QuoteSource]:
        """The quote source of each publisher (HRPs have their own market)."""
        main = self.source.build()
        out: dict[str, QuoteSource] = {}
        for p in self.publishers:
            if p.kind == "hrp":
                out[p.name] = GbmMarket(len(p.symbols), seed=p.seed, names=p.symbols, exchange=HRP_EXCHANGE)
            else:
                out[p.name] = main
        return out

    def subscription_count(self) -> int:
        return sum(len(s.subscriptions) for s in self.subscribers)

    def end_offset_s(self) -> float:
        """Seconds after release when the last publication and action are due."""
        last = [p.intended_offset_ns(p.count - 1) / 1e9 for p in self.publishers if p.count]
        last += [a.at_s for s in self.subscribers for a in s.actions]
        return max(last, default=0.0)

    # ---- JSON ----------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        def action(a: Action) -> dict[str, Any]:
            d: dict[str, Any] = {"at_s": a.at_s, "op": a.op, "sub_id": a.sub_id}
            if a.op == "subscribe":
                d["broker"] = a.broker
                d["filter"] = a.filter.to_json() if a.filter else []
            return d

        return {
            "schema_version": self.schema_version,
            "run_id": self.run_id,
            "seed": self.seed,
            "schema": self.schema,
            "source": {**self.source.__dict__, "csv": list(self.source.csv)},
            "brokers": [b.__dict__ for b in self.brokers],
            "subscribers": [
                {
                    "name": s.name,
                    "broker": s.broker,
                    "subscriptions": [{"sub_id": i, "filter": f.to_json()} for i, f in s.subscriptions],
                    "actions": [action(a) for a in s.actions],
                }
                for s in self.subscribers
            ],
            "publishers": [{**p.__dict__, "symbols": list(p.symbols)} for p in self.publishers],
            "release": self.release.__dict__,
            "drain_s": self.drain_s,
            "subscribe_timeout_s": self.subscribe_timeout_s,
            "timeout_s": self.timeout_s,
        }

    def dumps(self) -> str:
        """Canonical text: the same plan always gives the same bytes."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")) + "\n"

    @classmethod
    def from_json(cls, doc: Any, where: str = "plan") -> Plan:
        return _plan_from_json(doc, where)


def load(path: str | Path) -> Plan:
    """Read a plan file; a ``.gz`` suffix means gzipped JSON (how a large plan fits a ConfigMap)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
        doc = json.loads(gzip.decompress(raw) if p.suffix == ".gz" else raw)
    except FileNotFoundError:
        raise PlanError(f"{p}: no such plan file") from None
    except json.JSONDecodeError as e:
        raise PlanError(f"{p}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    return Plan.from_json(doc, str(p))


def write(plan: Plan, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(plan.dumps())
    return p


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


def _plan_from_json(doc: Any, where: str) -> Plan:
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
    num = (int, float)
    src = _get(doc, "source", where, dict, {})
    _check_keys(src, {"kind", "symbols", "zipf_s", "seed", "csv"}, f"{where}.source")
    source = SourceSpec(
        kind=_get(src, "kind", f"{where}.source", str, "gbm"),
        symbols=_get(src, "symbols", f"{where}.source", int, 500),
        zipf_s=float(_get(src, "zipf_s", f"{where}.source", num, 1.0)),
        seed=_get(src, "seed", f"{where}.source", int, 0),
        csv=tuple(_get(src, "csv", f"{where}.source", list, [])),
    )
    if source.kind not in ("gbm", "csv"):
        raise PlanError(f"{where}.source.kind: {source.kind!r} is not one of 'gbm', 'csv'")
    brokers = []
    for k, b in enumerate(_get(doc, "brokers", where, list)):
        w = f"{where}.brokers[{k}]"
        _check_keys(b, {"id", "address", "region", "cluster"}, w)
        addr = _get(b, "address", w, str)
        if ":" not in addr:
            raise PlanError(f"{w}.address: expected host:port, got {addr!r}")
        brokers.append(
            BrokerEndpoint(
                _get(b, "id", w, str), addr, _get(b, "region", w, str, ""), _get(b, "cluster", w, int, 0)
            )
        )
    known = {b.id for b in brokers}

    def broker_ref(d: Mapping[str, Any], w: str) -> str:
        bid = _get(d, "broker", w, str)
        if bid not in known:
            raise PlanError(f"{w}.broker: unknown broker {bid!r}; the plan has {sorted(known)}")
        return bid

    def flt(d: Any, w: str) -> Filter:
        try:
            f = Filter.from_json(d, w)
            schema.check_filter(f, w)
        except FilterError as e:
            raise PlanError(str(e)) from None
        return f

    subscribers = []
    ids: set[str] = set()

    def new_id(sid: str, w: str) -> str:
        if sid in ids:
            raise PlanError(f"{w}: sub_id {sid!r} is used twice")
        ids.add(sid)
        return sid

    for k, s in enumerate(_get(doc, "subscribers", where, list)):
        w = f"{where}.subscribers[{k}]"
        _check_keys(s, {"name", "broker", "subscriptions", "actions"}, w)
        subs = []
        for j, d in enumerate(_get(s, "subscriptions", w, list)):
            wj = f"{w}.subscriptions[{j}]"
            _check_keys(d, {"sub_id", "filter"}, wj)
            subs.append(
                (new_id(_get(d, "sub_id", wj, str), wj), flt(_get(d, "filter", wj, list), f"{wj}.filter"))
            )
        actions = []
        for j, a in enumerate(_get(s, "actions", w, list, [])):
            wj = f"{w}.actions[{j}]"
            _check_keys(a, {"at_s", "op", "sub_id", "broker", "filter"}, wj)
            op = _get(a, "op", wj, str)
            if op == "subscribe":
                act = Action(
                    float(_get(a, "at_s", wj, num)),
                    "subscribe",
                    new_id(_get(a, "sub_id", wj, str), wj),
                    broker_ref(a, wj),
                    flt(_get(a, "filter", wj, list), f"{wj}.filter"),
                )
            elif op == "unsubscribe":
                act = Action(float(_get(a, "at_s", wj, num)), "unsubscribe", _get(a, "sub_id", wj, str))
            else:
                raise PlanError(f"{wj}.op: {op!r} is not one of 'subscribe', 'unsubscribe'")
            actions.append(act)
        subscribers.append(
            SubscriberPlan(_get(s, "name", w, str), broker_ref(s, w), tuple(subs), tuple(actions))
        )
    publishers = []
    for k, p in enumerate(_get(doc, "publishers", where, list)):
        w = f"{where}.publishers[{k}]"
        _check_keys(
            p, {"name", "broker", "count", "rate_per_s", "start_s", "seed", "kind", "symbols", "batch_max"}, w
        )
        pub = PublisherPlan(
            name=_get(p, "name", w, str),
            broker=broker_ref(p, w),
            count=_get(p, "count", w, int),
            rate_per_s=float(_get(p, "rate_per_s", w, num)),
            start_s=float(_get(p, "start_s", w, num, 0.0)),
            seed=_get(p, "seed", w, int, 0),
            kind=_get(p, "kind", w, str, "regular"),
            symbols=tuple(_get(p, "symbols", w, list, [])),
            batch_max=_get(p, "batch_max", w, int, 64),
        )
        if pub.kind not in ("regular", "hrp"):
            raise PlanError(f"{w}.kind: {pub.kind!r} is not one of 'regular', 'hrp'")
        if pub.rate_per_s <= 0 or pub.count < 0 or pub.batch_max < 1:
            raise PlanError(f"{w}: needs rate_per_s > 0, count >= 0 and batch_max >= 1")
        if pub.kind == "hrp" and not pub.symbols:
            raise PlanError(f"{w}.symbols: an HRP needs its symbols")
        publishers.append(pub)
    names = [s.name for s in subscribers] + [p.name for p in publishers]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise PlanError(f"{where}: client name(s) {dup} used twice")
    rel = _get(doc, "release", where, dict, {})
    _check_keys(rel, {"mode", "at_ns", "settle_s", "quiescence_timeout_s"}, f"{where}.release")
    release = ReleaseSpec(
        mode=_get(rel, "mode", f"{where}.release", str, "auto"),
        at_ns=_get(rel, "at_ns", f"{where}.release", int, 0),
        settle_s=float(_get(rel, "settle_s", f"{where}.release", num, 1.0)),
        quiescence_timeout_s=float(_get(rel, "quiescence_timeout_s", f"{where}.release", num, 60.0)),
    )
    if release.mode not in ("auto", "file", "at"):
        raise PlanError(f"{where}.release.mode: {release.mode!r} is not one of 'auto', 'file', 'at'")
    return Plan(
        run_id=_get(doc, "run_id", where, str, ""),
        seed=_get(doc, "seed", where, int, 0),
        schema=schema.name,
        source=source,
        brokers=tuple(brokers),
        subscribers=tuple(subscribers),
        publishers=tuple(publishers),
        release=release,
        drain_s=float(_get(doc, "drain_s", where, num, 2.0)),
        subscribe_timeout_s=float(_get(doc, "subscribe_timeout_s", where, num, 60.0)),
        timeout_s=float(_get(doc, "timeout_s", where, num, 3600.0)),
    )


# ---- building a plan from the spec's workload section ------------------------------------------

WORKLOAD_KEYS = {
    "schema": "notification schema name (stock)",
    "symbols": "number of symbols in the synthetic market",
    "zipf_s": "Zipf exponent of symbol popularity",
    "csv": "list of daily-quote CSV files to replay instead of the synthetic market",
    "subscribers": "number of subscribers (one subscription each, plus HRP interest)",
    "selectivity": "target fraction of quotes each subscription matches",
    "covering": "null or {degree}: root subscriptions and covered children",
    "publishers": "number of regular publishers",
    "notifications_per_publisher": "quotes each regular publisher issues",
    "rate_per_minute": "quotes per minute per regular publisher",
    "start_spread_s": "publishers start uniformly within this many seconds after release",
    "placement": "client placement mode (random, edge, per-cluster, explicit)",
    "explicit_placement": "client -> broker map for placement: explicit",
    "hrp": "null or {rate_per_minute, notifications, start_s, interested_fraction}",
    "churn": "null or {rate_per_minute, mobility: none|region|cluster, start_s, duration_s, away_s}",
    "unsub_burst": "null or {count, interval_ms, start_s}: unsubscribe covering roots",
    "time_scale": "divide every rate by this (and stretch every time by it)",
    "drain_s": "seconds the run waits after the last publication",
}


def client_names(subscribers: int, publishers: int, hrp: bool) -> tuple[list[str], list[str], list[str]]:
    """Subscriber, publisher and HRP client names: ``s<k>``, ``p<k>`` (zero-padded, so they sort) and ``h0``.

    Sub and pub ids derive from them (``sub-s07-0``, ``pub-p2-17``); the orchestrator's placement
    and an explicit placement in a spec use these names too.
    """
    width_s, width_p = len(str(max(subscribers - 1, 0))), len(str(max(publishers - 1, 0)))
    return (
        [f"s{k:0{width_s}d}" for k in range(subscribers)],
        [f"p{k:0{width_p}d}" for k in range(publishers)],
        ["h0"] if hrp else [],
    )


def _sub(d: Mapping[str, Any] | None, keys: set[str], where: str) -> dict[str, Any]:
    if d is None:
        return {}
    _check_keys(d, keys, where)
    return dict(d)


def build_plan(
    workload: Mapping[str, Any],
    scot: Scot,
    addresses: Mapping[str, str],
    seed: int,
    run_id: str = "",
    release: ReleaseSpec | None = None,
    hosts: Mapping[str, str] | None = None,
) -> Plan:
    """The plan of a spec's ``workload:`` section (DESIGN §4) on ``scot`` with broker ``addresses``.

    ``hosts`` (client name -> broker id, names from :func:`client_names`) places the clients
    where the orchestrator decided; without it the section's ``placement`` mode is applied here.

    Pure: the same arguments give the same plan, byte for byte (:meth:`Plan.dumps`).
    """
    w = "workload"
    _check_keys(workload, set(WORKLOAD_KEYS), w)
    g = dict(workload)
    scale = float(g.get("time_scale", 1.0))
    if scale <= 0:
        raise PlanError(f"{w}.time_scale: must be > 0, got {scale}")
    n_sub = int(g.get("subscribers", 60))
    n_pub = int(g.get("publishers", 6))
    sel = float(g.get("selectivity", 0.02))
    csv = tuple(str(p) for p in g.get("csv") or ())
    source = SourceSpec(
        "csv" if csv else "gbm", int(g.get("symbols", 500)), float(g.get("zipf_s", 1.0)), seed, csv
    )
    get_schema(str(g.get("schema", "stock")))
    missing = sorted(b.id for b in scot.brokers if b.id not in addresses)
    if missing:
        raise PlanError(f"addresses: no address for broker(s) {missing}")
    brokers = tuple(BrokerEndpoint(b.id, addresses[b.id], b.region, b.cluster) for b in scot.brokers)
    hrp = _sub(
        g.get("hrp"), {"rate_per_minute", "notifications", "start_s", "interested_fraction"}, f"{w}.hrp"
    )
    churn = _sub(
        g.get("churn"), {"rate_per_minute", "mobility", "start_s", "duration_s", "away_s"}, f"{w}.churn"
    )
    burst = _sub(g.get("unsub_burst"), {"count", "interval_ms", "start_s"}, f"{w}.unsub_burst")
    cov = _sub(g.get("covering"), {"degree"}, f"{w}.covering")

    sub_names, pub_names, hrp_names = client_names(n_sub, n_pub, bool(hrp))
    names = sub_names + pub_names + hrp_names
    if hosts is not None:
        unplaced = [n for n in names if n not in hosts]
        if unplaced:
            raise PlanError(f"hosts: no host broker for client(s) {unplaced[:5]}")
        where_is = {n: hosts[n] for n in names}
    else:
        mode = str(g.get("placement", "random"))
        try:
            where_is = placement(scot, names, mode, seed, g.get("explicit_placement"))
        except ValueError as e:
            raise PlanError(f"{w}.placement: {e}") from None

    src = source.build()
    # calibrate on streams as long as the publishers' own: a price drifts along a stream, so a
    # filter calibrated on long streams matches short ones at another rate
    per_pub = int(g.get("notifications_per_publisher", 200))
    cal = Calibration.of(calibration_sample(src, seed, stream_length=per_pub if per_pub > 0 else 1000))
    if cov:
        filters = list(generate_covering(src, n_sub, float(cov.get("degree", 30)), sel, seed, cal).filters)
    else:
        filters = generate(src, n_sub, sel, seed, cal)
    rng = random.Random(f"plan:{seed}")
    subs: dict[str, list[tuple[str, Filter]]] = {
        n: [(f"sub-{n}-0", filters[k])] for k, n in enumerate(sub_names)
    }
    actions: dict[str, list[Action]] = {n: [] for n in sub_names}

    publishers = [
        PublisherPlan(
            name=n,
            broker=where_is[n],
            count=int(g.get("notifications_per_publisher", 200)),
            rate_per_s=float(g.get("rate_per_minute", 600)) / 60.0 / scale,
            start_s=round(rng.uniform(0.0, float(g.get("start_spread_s", 0.0))) * scale, 6),
            seed=seed * 1000 + k,
        )
        for k, n in enumerate(pub_names)
    ]
    if hrp:
        sym = HRP_SYMBOL.format(0)
        publishers.append(
            PublisherPlan(
                name="h0",
                broker=where_is["h0"],
                count=int(hrp.get("notifications", 1000)),
                rate_per_s=float(hrp.get("rate_per_minute", 6000)) / 60.0 / scale,
                start_s=float(hrp.get("start_s", 0.0)) * scale,
                seed=seed * 1000 + 999,
                kind="hrp",
                symbols=(sym,),
            )
        )
        elsewhere = [n for n in sub_names if where_is[n] != where_is["h0"]] or list(sub_names)
        k_int = max(1, round(float(hrp.get("interested_fraction", 0.002)) * n_sub)) if n_sub else 0
        for n in sorted(rng.sample(elsewhere, min(k_int, len(elsewhere)))):
            subs[n].append((f"sub-{n}-{len(subs[n])}", Filter.parse(f'symbol = "{sym}"')))

    if burst:
        if not cov:
            raise PlanError(
                f"{w}.unsub_burst: needs covering mode (workload.covering) to have roots to remove"
            )
        nrs = new_roots(filters)
        roots = sorted(nrs, key=lambda r: (-len(nrs[r]), r))
        count = int(burst.get("count", len(roots)))
        if count > len(roots):
            raise PlanError(f"{w}.unsub_burst.count: {count} > the {len(roots)} root subscriptions")
        t0, step = (
            float(burst.get("start_s", 0.0)) * scale,
            float(burst.get("interval_ms", 500)) / 1000 * scale,
        )
        for k, r in enumerate(sorted(roots[:count])):
            n = sub_names[r]
            actions[n].append(Action(round(t0 + k * step, 6), "unsubscribe", subs[n][0][0]))

    if churn and float(churn.get("rate_per_minute", 0)) > 0 and n_sub:
        movers = [n for n in sub_names if not actions[n]]  # a burst's subscriptions are not churned too
        _plan_churn(churn, scot, scale, rng, movers, where_is, subs, actions, f"{w}.churn", publishers)

    return Plan(
        run_id=run_id,
        seed=seed,
        schema="stock",
        source=source,
        brokers=brokers,
        subscribers=tuple(
            SubscriberPlan(n, where_is[n], tuple(subs[n]), tuple(sorted(actions[n], key=lambda a: a.at_s)))
            for n in sub_names
        ),
        publishers=tuple(publishers),
        release=release or ReleaseSpec(),
        drain_s=float(g.get("drain_s", 2.0)) * scale,
    )


def _plan_churn(
    churn: dict[str, Any],
    scot: Scot,
    scale: float,
    rng: random.Random,
    sub_names: Sequence[str],
    where_is: dict[str, str],
    subs: dict[str, list[tuple[str, Filter]]],
    actions: dict[str, list[Action]],
    where: str,
    publishers: Sequence[PublisherPlan],
) -> None:
    """Unsubscribe/resubscribe cycles at ``rate_per_minute`` (all subscribers together).

    A cycle picks a subscriber that is not away, unsubscribes its first
    subscription, and resubscribes the same filter ``away_s`` later under the
    next sub_id at its broker (``mobility: none``), at another broker of its
    region (``region``: B(a, j != i)) or of its cluster (``cluster``: B(a' != a, i)).
    The subscriber stays at the new broker.
    """
    mobility = str(churn.get("mobility", "none"))
    if mobility not in ("none", "region", "cluster"):
        raise PlanError(f"{where}.mobility: {mobility!r} is not one of 'none', 'region', 'cluster'")
    group = scot.regions() if mobility == "region" else None
    if mobility == "region" and scot.m < 2:
        raise PlanError(f"{where}.mobility: 'region' needs a SCOT with m >= 2 (a region of one broker)")
    if mobility == "cluster" and len(scot.factor.vertices) < 2:
        raise PlanError(f"{where}.mobility: 'cluster' needs a cluster of at least 2 brokers")
    period = 60.0 / float(churn["rate_per_minute"]) * scale
    start = float(churn.get("start_s", 0.0)) * scale
    default_end = max((p.intended_offset_ns(p.count - 1) / 1e9 for p in publishers if p.count), default=start)
    end = start + float(churn["duration_s"]) * scale if "duration_s" in churn else default_end
    away = float(churn.get("away_s", 1.0)) * scale
    busy_until = {n: -1.0 for n in sub_names}
    current = {n: where_is[n] for n in sub_names}
    active = {n: subs[n][0] for n in sub_names}
    counter = {n: len(subs[n]) for n in sub_names}
    t = start
    while t <= end:
        free = [n for n in sub_names if busy_until[n] < t]
        if free:
            n = rng.choice(free)
            b = scot.by_id[current[n]]
            if mobility == "region":
                assert group is not None
                choices = [x for x in group[b.region] if x != b.id]
            elif mobility == "cluster":
                choices = [x for x in scot.clusters()[b.cluster] if x != b.id]
            else:
                choices = [b.id]
            dest = rng.choice(choices)
            old_id, flt = active[n]
            new_id = f"sub-{n}-{counter[n]}"
            counter[n] += 1
            actions[n].append(Action(round(t, 6), "unsubscribe", old_id))
            actions[n].append(Action(round(t + away, 6), "subscribe", new_id, dest, flt))
            active[n] = (new_id, flt)
            current[n] = dest
            busy_until[n] = t + away
        t += period
