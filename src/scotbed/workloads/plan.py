"""The workload plan: the one JSON file the orchestrator writes and every Locust process reads.

A plan fixes everything a run issues, so two runs of one plan issue the same
subscriptions and the same quotes (only timing differs). Contents
(``schema_version`` 1; times in seconds unless the name says ``_ns``):

- ``brokers``: id -> gRPC address, region and cluster of every broker a client uses, and its
  ``outages``: ``[from_s, until_s]`` spans in which the run's fault timeline takes it down on purpose
  (a kill or stop until its restart is done at the latest; only when there are any);
- ``source``: the quote source (``gbm`` market of ``symbols`` with ``zipf_s``, ``csv`` replay
  of ``csv`` files, or ``gryphon`` notifications of ``attributes`` x ``values``) and its ``seed``;
- ``subscribers``: name, host broker, initial subscriptions (``sub_id`` + filter in JSON form),
  and ``actions``: churn and bursts as ``{"at_s", "op", "sub_id", "broker", "filter"}``;
- ``publishers``: name, host broker, ``count`` quotes at ``rate_per_s`` from ``start_s``,
  stream ``seed``, ``kind`` (``regular`` or ``hrp``), for an HRP its private ``symbols``, and
  ``poisson`` (Poisson arrivals at ``rate_per_s`` instead of a fixed period);
- ``release``: when publishers start (see :mod:`scotbed.workloads.runner`);
- ``drain_s``: how long the run waits after the last publication and action before it ends.

Times ``at_s`` and ``start_s`` count from the *release* instant t0; initial
subscriptions are issued before it. Ids are ``sub-<subscriber>-<k>`` and
``pub-<publisher>-<i>``: unique across the run and derived from the plan alone.
Output goes under the run directory (``events/``, ``workload/``, ``locust/``, docs/design.md §5).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from scotbed import contract
from scotbed.bounds import MAX_CHURN_CYCLES
from scotbed.errors import UserError
from scotbed.experiment.workload_params import (
    ChurnParams,
    GryphonParams,
    HrpParams,
    UnsubBurstParams,
    WorkloadParams,
)
from scotbed.filters import Filter
from scotbed.topology import Scot
from scotbed.workloads import gryphon
from scotbed.workloads.covering import new_roots
from scotbed.workloads.quotes import CsvReplay, GbmMarket, QuoteSource
from scotbed.workloads.schema import get_schema
from scotbed.workloads.subscriptions import run_filters

PLAN_VERSION = 1
HRP_SYMBOL = "_HRP{}"  # outside every market's tickers, so only interested subscribers match it
HRP_EXCHANGE = "HRP"
#: how often a client whose broker is down on purpose asks whether it serves again (its Locust user and
#: the sim backend's clients alike)
SESSION_RETRY_S = 0.1


class PlanError(UserError):
    """A plan or workload section that cannot run; the message names the field."""


@dataclass(frozen=True)
class BrokerEndpoint:
    id: str
    address: str  # host:port of the broker's gRPC server
    region: str = ""
    cluster: int = 0
    # (from_s, until_s) after release: the fault timeline takes the broker down on purpose in between,
    # so a client session lost there is waited out and opened again (scotbed.workloads.users)
    outages: tuple[tuple[float, float], ...] = ()

    def outage_until(self, offset_s: float) -> float | None:
        """The end (s after release) of the outage ``offset_s`` falls in, or None outside every outage."""
        return next((until for start, until in self.outages if start <= offset_s <= until), None)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "address": self.address, "region": self.region}
        d["cluster"] = self.cluster
        return d | {"outages": [list(o) for o in self.outages]} if self.outages else d


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
    poisson: bool = False  # Poisson arrivals at rate_per_s (Gryphon's workload) instead of a fixed period

    def intended_offset_ns(self, i: int) -> int:
        """When quote ``i`` is due, after release: start + i / rate (the open-loop schedule)."""
        if self.poisson:
            return int(self.start_s * 1e9) + int(
                gryphon.poisson_offsets(self.rate_per_s, self.count, self.seed)[i] * 1e9
            )
        return int(self.start_s * 1e9) + int(i * 1e9 / self.rate_per_s)


@dataclass(frozen=True)
class SourceSpec:
    kind: Literal["gbm", "csv", "gryphon"] = "gbm"
    symbols: int = 500
    zipf_s: float = 1.0
    seed: int = 0
    csv: tuple[str, ...] = ()
    attributes: int = 15  # gryphon: attributes a0..a{N-1}
    values: int = 3  # gryphon: values per attribute

    def build(self, region: int = 0) -> QuoteSource:
        """The source; ``region`` (an index) chooses a gryphon publisher's preferred values."""
        if self.kind == "csv":
            return CsvReplay(self.csv)
        if self.kind == "gryphon":
            return gryphon.GryphonSource(
                gryphon.GryphonSchema(self.attributes, self.values, self.zipf_s), region
            )
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
        regions = gryphon.region_indexes(self.brokers)
        out: dict[str, QuoteSource] = {}
        for p in self.publishers:
            if p.kind == "hrp":
                out[p.name] = GbmMarket(len(p.symbols), seed=p.seed, names=p.symbols, exchange=HRP_EXCHANGE)
            elif self.source.kind == "gryphon":
                out[p.name] = self.source.build(regions[p.broker])
            else:
                out[p.name] = main
        return out

    def subscription_count(self) -> int:
        return sum(len(s.subscriptions) for s in self.subscribers)

    def publication_count(self) -> int:
        return sum(p.count for p in self.publishers)

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
            "brokers": [b.to_json() for b in self.brokers],
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


def write(plan: Plan, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(plan.dumps())
    return p


# ---- building a plan from typed workload parameters -------------------------------------------


def client_names(subscribers: int, publishers: int, hrp: bool) -> tuple[list[str], list[str], list[str]]:
    """Subscriber, publisher and HRP client names: ``s<k>``, ``p<k>`` (zero-padded, so they sort) and ``h0``.

    Sub and pub ids derive from them (``sub-s07-0``, ``pub-p2-17``); the orchestrator's placement
    and an explicit placement in a spec use these names too.
    """
    width_s, width_p = len(str(max(subscribers - 1, 0))), len(str(max(publishers - 1, 0)))
    return (
        [f"s{k:0{width_s}d}" for k in range(subscribers)],
        [f"p{k:0{width_p}d}" for k in range(publishers)],
        [contract.HRP_CLIENT] if hrp else [],
    )


def _source(g: WorkloadParams, seed: int) -> SourceSpec:
    if g.gryphon is not None:
        gp = g.gryphon
        return SourceSpec("gryphon", zipf_s=gp.zipf_s, seed=seed, attributes=gp.attributes, values=gp.values)
    return SourceSpec("csv" if g.csv else "gbm", g.symbols, g.zipf_s, seed, g.csv)


def _gryphon_subscriptions(
    gp: GryphonParams,
    brokers: Sequence[BrokerEndpoint],
    sub_names: Sequence[str],
    where_is: Mapping[str, str],
    seed: int,
) -> dict[str, list[tuple[str, Filter]]]:
    """Gryphon's subscriptions, ``subscriptions_per_client`` per subscriber, from its host's region."""
    regions = gryphon.region_indexes(brokers)
    per_client = gryphon.gryphon_filters(
        gp, [regions[where_is[n]] for n in sub_names], regions.values(), seed
    )
    return {n: [(f"sub-{n}-{j}", f) for j, f in enumerate(per_client[k])] for k, n in enumerate(sub_names)}


def build_plan(
    params: WorkloadParams,
    scot: Scot,
    addresses: Mapping[str, str],
    hosts: Mapping[str, str],
    seed: int,
    run_id: str = "",
    release: ReleaseSpec | None = None,
) -> Plan:
    """The plan of a workload on ``scot`` with broker ``addresses``; ``hosts`` (client name -> broker
    id, names from :func:`client_names`) places the clients where the orchestrator decided.

    Pure: the same arguments give the same plan, byte for byte (:meth:`Plan.dumps`).
    """
    g = params
    scale = g.time_scale
    source = _source(g, seed)
    get_schema(g.schema)
    missing = sorted(b.id for b in scot.brokers if b.id not in addresses)
    if missing:
        raise PlanError(f"addresses: no address for broker(s) {missing}")
    brokers = tuple(BrokerEndpoint(b.id, addresses[b.id], b.region, b.cluster) for b in scot.brokers)
    sub_names, pub_names, hrp_names = client_names(g.subscribers, g.publishers, g.hrp is not None)
    unplaced = [n for n in sub_names + pub_names + hrp_names if n not in hosts]
    if unplaced:
        raise PlanError(f"hosts: no host broker for client(s) {unplaced[:5]}")
    where_is = dict(hosts)

    filters: list[Filter] = []
    if g.gryphon is not None:
        subs = _gryphon_subscriptions(g.gryphon, brokers, sub_names, where_is, seed)
    else:
        degree = g.covering.degree if g.covering is not None else None
        filters = run_filters(
            source.build(), g.subscribers, g.selectivity, seed, g.notifications_per_publisher, degree
        )
        subs = {n: [(f"sub-{n}-0", filters[k])] for k, n in enumerate(sub_names)}
    rng = random.Random(f"plan:{seed}")
    actions: dict[str, list[Action]] = {n: [] for n in sub_names}
    publishers = [
        PublisherPlan(
            name=n,
            broker=where_is[n],
            count=g.notifications_per_publisher,
            rate_per_s=g.rate_per_minute / 60.0 / scale,
            start_s=round(rng.uniform(0.0, g.start_spread_s) * scale, 6),
            seed=seed * 1000 + k,
            poisson=g.gryphon is not None,
        )
        for k, n in enumerate(pub_names)
    ]
    if g.hrp is not None:
        publishers.append(_plan_hrp(g.hrp, g.subscribers, scale, seed, rng, sub_names, where_is, subs))
    if g.unsub_burst is not None:
        _plan_burst(g.unsub_burst, scale, filters, sub_names, subs, actions)
    if g.churn is not None and g.churn.rate_per_minute > 0 and g.subscribers:
        movers = [n for n in sub_names if not actions[n]]  # a burst's subscriptions are not churned too
        _plan_churn(g.churn, scot, scale, rng, movers, where_is, subs, actions, publishers)

    return Plan(
        run_id=run_id,
        seed=seed,
        schema=g.schema,
        source=source,
        brokers=brokers,
        subscribers=tuple(
            SubscriberPlan(n, where_is[n], tuple(subs[n]), tuple(sorted(actions[n], key=lambda a: a.at_s)))
            for n in sub_names
        ),
        publishers=tuple(publishers),
        release=release or ReleaseSpec(),
        drain_s=g.drain_s * scale,
    )


def _plan_hrp(
    hrp: HrpParams,
    n_sub: int,
    scale: float,
    seed: int,
    rng: random.Random,
    sub_names: Sequence[str],
    where_is: Mapping[str, str],
    subs: dict[str, list[tuple[str, Filter]]],
) -> PublisherPlan:
    """The high-rate publisher ``h0`` and the interest of ``interested_fraction`` of the subscribers
    (on other brokers than the HRP's) in its private symbol."""
    sym = HRP_SYMBOL.format(0)
    elsewhere = [n for n in sub_names if where_is[n] != where_is[contract.HRP_CLIENT]] or list(sub_names)
    k_int = max(1, round(hrp.interested_fraction * n_sub)) if n_sub else 0
    for n in sorted(rng.sample(elsewhere, min(k_int, len(elsewhere)))):
        subs[n].append((f"sub-{n}-{len(subs[n])}", Filter.parse(f'symbol = "{sym}"')))
    return PublisherPlan(
        name=contract.HRP_CLIENT,
        broker=where_is[contract.HRP_CLIENT],
        count=hrp.notifications,
        rate_per_s=hrp.rate_per_minute / 60.0 / scale,
        start_s=hrp.start_s * scale,
        seed=seed * 1000 + 999,
        kind="hrp",
        symbols=(sym,),
    )


def _plan_burst(
    burst: UnsubBurstParams,
    scale: float,
    filters: Sequence[Filter],
    sub_names: Sequence[str],
    subs: dict[str, list[tuple[str, Filter]]],
    actions: dict[str, list[Action]],
) -> None:
    """Unsubscriptions of the ``count`` broadest covering roots, ``interval_ms`` apart."""
    nrs = new_roots(list(filters))
    roots = sorted(nrs, key=lambda r: (-len(nrs[r]), r))
    if burst.count > len(roots):
        raise PlanError(f"workload.unsub_burst.count: {burst.count} > the {len(roots)} root subscriptions")
    t0, step = burst.start_s * scale, burst.interval_ms / 1000 * scale
    for k, r in enumerate(sorted(roots[: burst.count])):
        n = sub_names[r]
        actions[n].append(Action(round(t0 + k * step, 6), "unsubscribe", subs[n][0][0]))


def _plan_churn(
    churn: ChurnParams,
    scot: Scot,
    scale: float,
    rng: random.Random,
    sub_names: Sequence[str],
    where_is: dict[str, str],
    subs: dict[str, list[tuple[str, Filter]]],
    actions: dict[str, list[Action]],
    publishers: Sequence[PublisherPlan],
) -> None:
    """Unsubscribe/resubscribe cycles at ``rate_per_minute`` (all subscribers together).

    A cycle picks a subscriber that is not away, unsubscribes its first
    subscription, and resubscribes the same filter ``away_s`` later under the
    next sub_id at its broker (``mobility: none``), at another broker of its
    region (``region``: B(a, j != i)) or of its cluster (``cluster``: B(a' != a, i)).
    The subscriber stays at the new broker.
    """
    mobility = churn.mobility
    group = scot.regions() if mobility == "region" else None
    if mobility == "cluster" and len(scot.factor.vertices) < 2:
        raise PlanError("workload.churn.mobility: 'cluster' needs a cluster of at least 2 brokers")
    period = 60.0 / churn.rate_per_minute * scale
    start = churn.start_s * scale
    default_end = max((p.intended_offset_ns(p.count - 1) / 1e9 for p in publishers if p.count), default=start)
    end = start + churn.duration_s * scale if churn.duration_s is not None else default_end
    away = churn.away_s * scale
    busy_until = {n: -1.0 for n in sub_names}
    current = {n: where_is[n] for n in sub_names}
    active = {n: subs[n][0] for n in sub_names}
    counter = {n: len(subs[n]) for n in sub_names}
    for k in range(_churn_cycles(churn, start, end, period)):
        t = start + k * period
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


def _churn_cycles(churn: ChurnParams, start: float, end: float, period: float) -> int:
    """How many cycles start in [start, end], ``period`` apart; more than :data:`MAX_CHURN_CYCLES` is
    a :class:`PlanError` naming the rate and the span."""
    if end < start:
        return 0
    cycles = (end - start) / period + 1
    if not cycles <= MAX_CHURN_CYCLES:
        raise PlanError(
            f"workload.churn.rate_per_minute: {churn.rate_per_minute:g} per minute from {start:g} s to "
            f"{end:g} s is {cycles:.3g} unsubscribe/re-subscribe cycles; at most {MAX_CHURN_CYCLES} "
            "(lower the rate or churn.duration_s)"
        )
    return int(cycles)
