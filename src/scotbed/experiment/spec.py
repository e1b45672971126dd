"""The experiment spec (docs/design.md §4): typed, defaulted, and loud when wrong.

One pydantic model per block; every field documents its unit. Unknown keys
are errors. All problems surface as one :class:`SpecError` whose lines each
start with the key path (``topology.connectivity: ...``), name the bad value
and say what is allowed, so a user never has to read a pydantic dump.

Checks happen in two layers: the models check each value on its own, and
:mod:`scotbed.experiment.spec_semantics` checks values against each other (routing vs
overlay). :func:`build_scot` turns the topology block into a
:class:`scotbed.topology.Scot`; it is the only function here that reads
files (edge-list and GraphML factors, relative to the spec file, through
:func:`scotbed.experiment.spec_factors.build`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BeforeValidator,
    Field,
    PrivateAttr,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from scotbed import bounds, contract
from scotbed import routing as routing_registry
from scotbed import topology as topo
from scotbed.experiment import spec_factors, spec_peers, spec_selforg, spec_semantics
from scotbed.experiment import workload_params as wp
from scotbed.experiment.overrides import apply_sets
from scotbed.experiment.spec_errors import SpecError, describe
from scotbed.experiment.spec_factors import (
    ACYCLIC_KINDS,
    AcyclicSpec,
    Block,
    FileName,
    NamedFactor,
)
from scotbed.experiment.spec_faults import FaultSpec
from scotbed.loader import read_document

# --- topology ---------------------------------------------------------------------------------


class TopologySpec(Block):
    kind: Literal["scot", "tree", "peers"] = Field(
        default="scot", description="scot = acyclic factor □ K_m; tree = factor; peers (§10): no brokers"
    )
    acyclic: AcyclicSpec = Field(default_factory=lambda: NamedFactor(kind="paper-fig2"))
    connectivity: int | None = Field(
        default=None,
        ge=1,
        le=bounds.MAX_BROKERS,
        description="m of K_m (clusters); default 3 for scot, always 1 for tree",
    )
    costs: spec_selforg.CostsSpec | None = Field(default=None, description="link and broker costs (§10)")
    self_organising: spec_selforg.SelfOrganisingSpec | None = Field(default=None, description="§10")
    peers: spec_peers.PeersSpec | None = Field(default=None, description="kind peers: n, id_space (§10)")

    @model_validator(mode="after")
    def _default_connectivity(self) -> TopologySpec:
        if self.connectivity is None:
            self.connectivity = 3 if self.kind == "scot" else 1
        return self

    @field_serializer("acyclic")
    def _dump_acyclic(self, acyclic: Any) -> Any:
        return acyclic.kind if isinstance(acyclic, NamedFactor) else acyclic.model_dump()

    @property
    def m(self) -> int:
        return self.connectivity or 1


# --- network and broker blocks ----------------------------------------------------------------


class LinksSpec(Block):
    """Link emulation at each broker's output queue: capacity (divided by workload.time_scale), then
    latency and jitter (multiplied by it; see :mod:`scotbed.broker.latency`)."""

    capacity_msgs_per_s: float = Field(
        default=0.0, ge=0, le=bounds.MAX_RATE_PER_S, description="messages/s per link; 0 = unlimited"
    )
    acol_capacity_msgs_per_s: float | None = Field(
        default=None,
        ge=0,
        le=bounds.MAX_RATE_PER_S,
        description="messages/s on aCOLs; default: capacity_msgs_per_s",
    )
    icol_capacity_msgs_per_s: float | None = Field(
        default=None,
        ge=0,
        le=bounds.MAX_RATE_PER_S,
        description="messages/s on iCOLs; default: capacity_msgs_per_s",
    )
    latency_ms: float = Field(
        default=0.0, ge=0, le=60_000, description="one-way delay per link in ms (× workload.time_scale)"
    )
    jitter_ms: float = Field(default=0.0, ge=0, le=60_000, description="the delay varies by ± this many ms")
    acol_latency_ms: float | None = Field(default=None, ge=0, le=60_000, description="default: latency_ms")
    icol_latency_ms: float | None = Field(default=None, ge=0, le=60_000, description="default: latency_ms")
    acol_jitter_ms: float | None = Field(default=None, ge=0, le=60_000, description="default: jitter_ms")
    icol_jitter_ms: float | None = Field(default=None, ge=0, le=60_000, description="default: jitter_ms")


class CongestionSpec(Block):
    """DNR's congestion detection per output queue (OctopiS Eq. 3); ignored by other algorithms."""

    window_ms: float = Field(
        default=50.0,
        gt=0,
        le=bounds.MAX_SECONDS * 1000,
        description="Δt, the congestion-element window in milliseconds",
    )
    ce_threshold: float = Field(
        default=1.0, gt=0, description="overloaded when CE = In/Out over Δt exceeds this"
    )
    queue_threshold: int = Field(
        default=50, ge=1, description="... or when the output queue holds more messages"
    )


class BrokersSpec(Block):
    """The brokers' own processing cost (scotbed.broker.service), × workload.time_scale; off by default."""

    service_us: float = Field(
        default=0.0, ge=0, le=bounds.MAX_SERVICE_US, description="µs of processing per message; 0 = none"
    )
    service_us_at: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=dict, description="per acyclic-factor vertex: its brokers' service_us"
    )
    match_us_per_entry: float = Field(
        default=0.0,
        ge=0,
        le=bounds.MAX_MATCH_US_PER_ENTRY,
        description="µs of matching per routing-table entry, for each notification; 0 = none",
    )


# --- workload ---------------------------------------------------------------------------------


class PlacementSpec(Block):
    """Which broker hosts each client; written as a bare mode string when it has no parameters.

    Client ids are ``s<k>``, ``p<k>`` (k from 0, zero-padded to the widest k) and ``h0`` for the HRP.
    """

    mode: Literal["random", "edge", "per-cluster", "explicit"] = Field(
        default="random",
        description="random: any broker; edge: edge brokers; per-cluster: round-robin over clusters; "
        "explicit: the brokers map",
    )
    clusters: list[int] | None = Field(
        default=None, description="per-cluster only: the cluster indices to use"
    )
    brokers: dict[str, str] | None = Field(default=None, description="explicit only: client id -> broker id")


def _placement_mode(value: Any) -> Any:
    return {"mode": value} if isinstance(value, str) else value


def _start_after_release() -> Any:
    """The ``start_s`` of a timed workload part (HRP, unsubscription burst, churn): one definition."""
    return Field(
        default=0.0,
        ge=0,
        le=bounds.MAX_SECONDS,
        description="seconds after the release, when the publishers start (each within start_spread_s)",
    )


class HrpSpec(Block):
    """A high-rate publisher burst (OctopiS §5 burst scenario)."""

    rate_per_minute: float = Field(
        gt=0, le=bounds.MAX_RATE_PER_S * 60, description="notifications per minute"
    )
    notifications: int = Field(ge=1, le=bounds.MAX_NOTIFICATIONS, description="notifications in the burst")
    start_s: float = _start_after_release()
    interested_fraction: float = Field(
        default=0.002,
        ge=0,
        le=1,
        description="fraction of subscribers that subscribe to the HRP's notifications",
    )


class UnsubBurstSpec(Block):
    """Unsubscriptions of the broadest covering (root) subscriptions in a row (selective-pruning
    paper §6); needs ``workload.covering``."""

    count: int = Field(ge=1, le=bounds.MAX_SUBSCRIBERS, description="root subscriptions removed")
    interval_ms: float = Field(
        default=500.0,
        ge=0,
        le=bounds.MAX_SECONDS * 1000,
        description="milliseconds between two unsubscriptions",
    )
    start_s: float = _start_after_release()


class ChurnSpec(Block):
    """Subscribers that unsubscribe and subscribe again while notifications flow (mobile scenario)."""

    rate_per_minute: float = Field(
        gt=0,
        le=bounds.MAX_RATE_PER_S * 60,
        description="unsubscribe/re-subscribe cycles per minute, all together",
    )
    mobility: Literal["none", "region", "cluster"] = Field(
        default="none",
        description="where a subscriber re-subscribes: its own broker, another broker of its region "
        "B(a, j != i), or of its cluster B(a' != a, i)",
    )
    start_s: float = _start_after_release()
    duration_s: float | None = Field(
        default=None,
        gt=0,
        le=bounds.MAX_SECONDS,
        description="seconds of churn; default: until the last publication",
    )
    away_s: float = Field(
        default=1.0,
        ge=0,
        le=bounds.MAX_SECONDS,
        description="seconds between unsubscribing and re-subscribing",
    )


class CoveringSpec(Block):
    """Covering mode: root subscriptions and subscriptions they cover (for the covering family)."""

    degree: float = Field(
        default=30.0, ge=0, le=100, description="percent of subscriptions covered by a root subscription"
    )


class GryphonWorkloadSpec(Block):
    """Gryphon's workload (schema: gryphon): see scotbed.workloads.gryphon."""

    attributes: int = Field(default=15, ge=1, le=64, description="attributes a0..a{N-1}")
    values: int = Field(default=3, ge=1, le=bounds.MAX_GRYPHON_VALUES, description="values per attribute")
    zipf_s: float = Field(default=1.0, ge=0, description="Zipf exponent of value preference")
    matching: float = Field(
        default=0.01, gt=0, le=1, description="target fraction of subscriptions a notification matches"
    )
    dont_care: float | None = Field(
        default=None, ge=0, le=1, description="fixed don't-care probability instead of calibrating"
    )
    subscriptions_per_client: int = Field(
        default=10,
        ge=1,
        le=bounds.MAX_GRYPHON_SUBSCRIPTIONS_PER_CLIENT,
        description="subscriptions per subscriber",
    )


class WorkloadSpec(Block):
    schema_: Literal["stock", "gryphon"] = Field(
        default="stock",
        alias="schema",
        description="stock: 10 attributes per quote; gryphon: enumerated equality schema (gryphon block)",
    )
    gryphon: GryphonWorkloadSpec | None = None
    symbols: int = Field(default=500, ge=1, le=bounds.MAX_SYMBOLS, description="distinct stock symbols")
    zipf_s: float = Field(default=1.0, ge=0, description="Zipf exponent of symbol popularity")
    csv: list[FileName] | None = Field(
        default=None,
        description="daily-quote CSV files to replay instead of the synthetic market (relative to the spec)",
    )
    subscribers: int = Field(
        default=60, ge=1, le=bounds.MAX_SUBSCRIBERS, description="subscriber clients, one subscription each"
    )
    selectivity: float = Field(
        default=0.02, gt=0, le=1, description="expected fraction of notifications a filter matches"
    )
    covering: CoveringSpec | None = None
    publishers: int = Field(default=6, ge=0, le=bounds.MAX_PUBLISHERS, description="publisher clients")
    notifications_per_publisher: int = Field(
        default=200, ge=0, le=bounds.MAX_NOTIFICATIONS, description="notifications each publisher sends"
    )
    rate_per_minute: float = Field(
        default=600.0,
        gt=0,
        le=bounds.MAX_RATE_PER_S * 60,
        description="notifications per minute per publisher",
    )
    start_spread_s: float = Field(
        default=0.0,
        ge=0,
        le=bounds.MAX_SECONDS,
        description="publishers start uniformly within this many seconds",
    )
    placement: Annotated[PlacementSpec, BeforeValidator(_placement_mode)] = Field(
        default_factory=lambda: PlacementSpec()
    )
    hrp: HrpSpec | None = None
    churn: ChurnSpec | None = None
    unsub_burst: UnsubBurstSpec | None = None
    time_scale: float = Field(
        default=1.0,
        ge=bounds.MIN_TIME_SCALE,
        le=bounds.MAX_TIME_SCALE,
        description="divide all rates and link capacities by this, multiply delays",
    )
    drain_s: float = Field(
        default=2.0,
        ge=0,
        le=bounds.MAX_SECONDS,
        description="seconds the workload waits for deliveries after its last publication",
    )
    script: FileName | None = Field(
        default=None,
        description="scripted scenario (JSON Lines, docs/design.md §8), relative to the spec file; "
        "replaces the generated workload",
    )
    peers: spec_peers.PeersWorkloadSpec | None = Field(default=None, description="topology kind peers (§10)")

    @field_serializer("placement")
    def _dump_placement(self, p: PlacementSpec) -> Any:
        return p.mode if p.clusters is None and p.brokers is None else p.model_dump(exclude_none=True)

    def params(self, base_dir: Path) -> wp.WorkloadParams:
        """The typed parameters the plan builder takes; CSV files resolved against ``base_dir``.
        Placement is not part of them: the orchestrator places the clients."""
        gryphon = self.gryphon or (GryphonWorkloadSpec() if self.schema_ == "gryphon" else None)
        typed: dict[str, Any] = {
            "schema": self.schema_,
            "gryphon": wp.GryphonParams(**gryphon.model_dump()) if gryphon else None,
            "csv": tuple(str((base_dir / f).resolve()) for f in self.csv or ()),
            "covering": wp.CoveringParams(**self.covering.model_dump()) if self.covering else None,
            "hrp": wp.HrpParams(**self.hrp.model_dump()) if self.hrp else None,
            "churn": wp.ChurnParams(**self.churn.model_dump()) if self.churn else None,
            "unsub_burst": wp.UnsubBurstParams(**self.unsub_burst.model_dump()) if self.unsub_burst else None,
        }
        flat = self.model_dump(exclude={"script", "placement", "schema_", "peers", *typed})
        return wp.WorkloadParams(**flat, **typed)


class HostBoundSpec(Block):
    """When the delays measure the host, not the routing: the thresholds of the verdict of
    :mod:`scotbed.analysis.validity` (criteria A, B, C there)."""

    lag_bound_ms: float = Field(
        default=20.0,
        gt=0,
        le=bounds.MAX_SECONDS * 1000,
        description="a sampling period whose latest wake-up is later than this many ms is lagging",
    )
    lag_periods_max: float = Field(
        default=0.05,
        gt=0,
        le=1,
        description="B: share of lagging periods (all brokers) that makes a run host-bound",
    )
    delay_share_max: float = Field(
        default=0.25, gt=0, description="A: share of the mean notification delay that lag may explain"
    )
    cpu_saturation_max: float = Field(default=0.9, gt=0, description="C: summed broker CPU share over cores")
    target_utilisation: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="the host (or a broker's core) utilisation the suggestion aims at",
    )
    waits_per_hop: float = Field(
        default=4.0, gt=0, description="A: loop waits a notification makes per broker it visits"
    )


class AnalysisSpec(Block):
    stability_window: int = Field(
        default=1000, ge=1, description="notifications per point of the stability curve"
    )
    settle_ms: float = Field(
        default=0.0,
        ge=0,
        le=bounds.MAX_SECONDS * 1000,
        description="milliseconds after a subscription change during which a publication counts as "
        "'in transition' rather than missing, on top of the logged propagation",
    )
    host_bound: HostBoundSpec = Field(default_factory=lambda: HostBoundSpec())


class TimeoutsSpec(Block):
    """Bounds on each run phase, in seconds; a phase that overruns fails the run."""

    ready_s: float = Field(
        default=120.0, gt=0, le=bounds.MAX_SECONDS, description="all brokers healthy and linked"
    )
    quiescent_s: float = Field(
        default=30.0, gt=0, le=bounds.MAX_SECONDS, description="subscriptions settled before publishing"
    )
    drain_s: float = Field(
        default=120.0, gt=0, le=bounds.MAX_SECONDS, description="deliveries after the last publication"
    )
    run_s: float = Field(default=3600.0, gt=0, le=bounds.MAX_SECONDS, description="the whole run")


class SecuritySpec(Block):
    tls: bool = Field(
        default=False,
        description="mutual TLS on every broker link and client channel, certificates fresh per run "
        "(scotbed.orchestrator.security)",
    )


class MetricsSpec(Block):
    prometheus: bool = Field(
        default=False,
        description="every broker serves Prometheus metrics on /metrics; the addresses go into the "
        "run's topology.json (scotbed.broker.metrics)",
    )


class Spec(Block):
    name: str = Field(
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=38,
        description="lowercase letters, digits and '-'; part of the run id, namespaces and labels",
    )
    seed: int = Field(
        default=0,
        ge=0,
        le=bounds.MAX_SEED,
        description="seeds placement, workload generation and random trees",
    )
    topology: Annotated[TopologySpec, BeforeValidator(spec_peers.lift)] = Field(
        default_factory=lambda: TopologySpec()
    )
    links: LinksSpec = Field(default_factory=lambda: LinksSpec())
    routing: str = Field(
        default=routing_registry.DEFAULT_ROUTING, description="routing algorithm (docs/design.md §1)"
    )
    routing_params: dict[str, Any] = Field(
        default_factory=dict, description="algorithm-specific parameters passed to every broker"
    )
    congestion: CongestionSpec = Field(default_factory=lambda: CongestionSpec())
    brokers: BrokersSpec = Field(default_factory=lambda: BrokersSpec())
    matching: Literal["naive", "counting", "pst"] = "counting"
    workload: WorkloadSpec = Field(default_factory=lambda: WorkloadSpec())
    analysis: AnalysisSpec = Field(default_factory=lambda: AnalysisSpec())
    backend: Literal["local", "compose", "k8s", "sim"] = "local"
    timeouts: TimeoutsSpec = Field(default_factory=lambda: TimeoutsSpec())
    faults: list[FaultSpec] = Field(
        default_factory=list,
        description="fault timeline during the publish phase (scotbed.orchestrator.faults)",
    )
    security: SecuritySpec = Field(default_factory=lambda: SecuritySpec())
    metrics: MetricsSpec = Field(default_factory=lambda: MetricsSpec())

    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)

    @field_validator("routing")
    @classmethod
    def _known_routing(cls, v: str) -> str:
        if v not in routing_registry.ALGORITHMS and v not in routing_registry.PEER_ALGORITHMS:
            allowed = ", ".join([*routing_registry.ALGORITHMS, *routing_registry.PEER_ALGORITHMS])
            raise ValueError(f"unknown routing algorithm; allowed: {allowed}")
        return v

    @property
    def base_dir(self) -> Path:
        """Where files named in the spec are looked up: the spec file's folder."""
        return self._base_dir


# --- loading, overrides, errors ---------------------------------------------------------------


def parse_spec(
    doc: Any, sets: Iterable[str] = (), base_dir: str | Path | None = None, source: str = "spec"
) -> Spec:
    """Validate a spec document (the parsed YAML), after applying ``--set`` overrides."""
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise SpecError(f"{source}: the spec must be a mapping of keys, got {type(doc).__name__}")
    doc = apply_sets(doc, sets)
    try:
        spec = Spec.model_validate(doc)
    except ValidationError as e:
        raise SpecError([describe(err, doc, Spec, ACYCLIC_KINDS) for err in e.errors()]) from None
    spec._base_dir = Path(base_dir) if base_dir is not None else Path.cwd()
    spec_semantics.check(spec)
    return spec


def load_spec(path: str | Path, sets: Iterable[str] = ()) -> Spec:
    p = Path(path)
    doc = read_document(p, "spec", SpecError, "yaml")
    return parse_spec(doc, sets, base_dir=p.resolve().parent, source=str(p))


PROVENANCE = "run"  # the block the orchestrator adds to spec.resolved.yaml: who, where, with what


def load_resolved(run: str | Path) -> Spec:
    """The spec a run ran with, typed: its ``spec.resolved.yaml`` (``run`` is the run directory or that
    file), without the provenance block ``run:``. A key that a run from an older version lacks takes
    the model's default. The cross-field checks (:func:`scotbed.experiment.spec_semantics.check`) are
    not repeated: the run passed them when it started, and the files a spec names need not exist
    where its run is read."""
    p = Path(run)
    path = p / contract.SPEC_RESOLVED if p.is_dir() else p
    doc = read_document(path, "resolved spec", SpecError, "yaml")
    if not isinstance(doc, dict):
        raise SpecError(f"{path}: the spec must be a mapping of keys, got {type(doc).__name__}")
    body = {k: v for k, v in doc.items() if k != PROVENANCE}
    try:
        spec = Spec.model_validate(body)
    except ValidationError as e:
        raise SpecError(
            [f"{path}: {describe(err, body, Spec, ACYCLIC_KINDS)}" for err in e.errors()]
        ) from None
    spec._base_dir = path.resolve().parent
    return spec


def dump_spec(spec: Spec) -> str:
    """The resolved spec as YAML (``spec.resolved.yaml``): every default written out."""
    return yaml.safe_dump(spec.model_dump(mode="json", by_alias=True), sort_keys=False)


# --- the overlay ------------------------------------------------------------------------------


def build_factor(spec: Spec) -> topo.AcyclicFactor:
    """The spec's acyclic factor (files relative to the spec file, seed defaulting to the spec's)."""
    return spec_factors.build(spec.topology.acyclic, spec.seed, spec.base_dir)


def build_scot(spec: Spec) -> topo.Scot:
    """The overlay the spec asks for; ``kind: tree`` is the factor alone (m = 1)."""
    factor = build_factor(spec)
    m = spec.topology.m
    if len(factor.vertices) * m > bounds.MAX_BROKERS:
        raise SpecError(
            f"topology: {len(factor.vertices)} vertices × {m} clusters is more than "
            f"{bounds.MAX_BROKERS} brokers"
        )
    return topo.Scot(factor, m)
