"""Per-broker configuration: what the orchestrator writes and the broker reads.

One JSON document per broker, or all of them in one file as
``{"schema_version": 1, "brokers": [doc, ...]}``. The broker gets the file and
its own id (``--id``). Units are in the field names or their comments.
Unknown fields are errors, so a typo never silently changes an experiment.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

from scotbed import routing as routing_registry
from scotbed.errors import UserError
from scotbed.loader import read_document

SCHEMA_VERSION = 1

MATCHING_ENGINES = ("naive", "counting", "pst")
BATCH_HEADER_BYTES = 1024  # room a link batch needs besides its envelopes (ids, seq, field tags)
#: a link's emulated latency and jitter are below this (1 h), in the config, at runtime and in a fault:
#: a longer delay is no experiment, and one near float's range would hold a link's batches for good
MAX_LINK_DELAY_MS = 3_600_000.0


def link_delay_problem(latency_ms: float, jitter_ms: float) -> str | None:
    """Why a link delay is out of range (non-finite, negative, 1 h or more), or None."""
    if all(0 <= v < MAX_LINK_DELAY_MS for v in (latency_ms, jitter_ms)):  # NaN fails every comparison
        return None
    bound = f"[0, {MAX_LINK_DELAY_MS:g}) ms (1 h)"
    return f"latency_ms and jitter_ms must be in {bound}: {latency_ms:g}, {jitter_ms:g}"


class ConfigError(UserError):
    """A broker configuration that cannot be used; the message names the field path."""


@dataclass(frozen=True)
class NeighbourConfig:
    id: str
    kind: Literal["aCOL", "iCOL"]  # the link to this neighbour: aCOL (same cluster), iCOL (same region)
    type: Literal["edge", "inner"]
    cluster: int
    region: str
    address: str  # host:port of the neighbour's gRPC server
    capacity_msgs_per_s: float | None = None  # None: the broker's default link capacity
    latency_ms: float = 0.0  # one-way delay added to every batch on this link (emulation)
    jitter_ms: float = 0.0  # the delay varies uniformly by ± this (never reordering)


@dataclass(frozen=True)
class CongestionConfig:
    """DNR's congestion detection (OctopiS Eq. 3)."""

    window_ms: float = 50.0  # Δt: the CE window
    ce_threshold: float = 1.0  # overloaded when CE = In/Out exceeds this
    queue_threshold: int = 50  # ... or when the output queue is longer than this (envelopes)


@dataclass(frozen=True)
class LogConfig:
    path: str = "-"  # JSONL event log; "-" = stdout; a ".gz" suffix compresses
    buffer_events: int = 4096  # events kept in memory before a write
    flush_interval_ms: float = 200.0
    sample_interval_ms: float = 250.0  # period of `queue` and `table` samples; 0 = off


@dataclass(frozen=True)
class LimitsConfig:
    """What a broker accepts and sends; applied by :mod:`scotbed.broker.limits`."""

    max_message_bytes: int = 4 * 1024 * 1024  # one gRPC message, either direction
    max_batch_envelopes: int = 256  # envelopes per link batch
    max_batch_bytes: int = 1024 * 1024  # envelope bytes per link batch; a larger envelope is dropped
    max_filter_predicates: int = 256  # per subscription
    max_filter_bytes: int = 64 * 1024  # encoded filter, per subscription
    max_notification_attrs: int = 256
    max_notification_bytes: int = 64 * 1024  # encoded notification
    max_id_bytes: int = 1024  # sub_id, pub_id, subscriber, publisher
    max_link_backlog: int = 100_000  # envelopes queued for a link before overflow drops
    # deliveries queued for one subscriber that reads slowly or never (encoded + 512 B each) before drops
    max_session_backlog_bytes: int = 16 * 1024 * 1024
    redial_initial_ms: float = 50.0
    redial_max_ms: float = 2000.0

    def check(self, where: str = "limits") -> None:
        for f in fields(self):
            if not getattr(self, f.name) > 0:
                raise ConfigError(f"{where}.{f.name}: must be > 0, got {getattr(self, f.name)!r}")
        if self.max_message_bytes < 2 * BATCH_HEADER_BYTES:
            raise ConfigError(f"{where}.max_message_bytes: must be >= {2 * BATCH_HEADER_BYTES}")

    @property
    def batch_bytes(self) -> int:
        """Envelope bytes per batch: ``max_batch_bytes``, within one message with its header."""
        return min(self.max_batch_bytes, self.max_message_bytes - BATCH_HEADER_BYTES)


@dataclass(frozen=True)
class BrokerConfig:
    id: str
    vertex: str  # G_A coordinate (region index)
    index: int  # K_m coordinate (cluster index)
    type: Literal["edge", "inner"]
    listen: str  # host:port to bind; port 0 = any free port (reported on stdout)
    neighbours: tuple[NeighbourConfig, ...] = ()
    clusters: int = 1  # m, the width of a CBV
    routing: str = routing_registry.DEFAULT_BROKER_ROUTING
    routing_params: dict[str, Any] = field(default_factory=dict)
    matching: str = "counting"
    link_capacity_msgs_per_s: float = 0.0  # default for every link; 0 = unlimited
    congestion: CongestionConfig = field(default_factory=CongestionConfig)
    log: LogConfig = field(default_factory=LogConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    run_id: str = ""
    run_token: str = (
        ""  # Admin (but Status) and Link callers must show it (scotbed.broker.runtoken); "" = none
    )
    prometheus_port: int | None = None  # None = no metrics endpoint
    schema_version: int = SCHEMA_VERSION
    service_us: float = 0.0  # processing time per message (scotbed.broker.service); 0 = none
    match_us_per_entry: float = 0.0  # a notification's matching time per routing-table entry; 0 = none
    # self-organising trees (scotbed.selforg.manager): settings, costs and tree; {} = off
    topology_manager: dict[str, Any] = field(default_factory=dict)

    @property
    def cluster(self) -> int:
        return self.index

    @property
    def region(self) -> str:
        return self.vertex

    def neighbour(self, nid: str) -> NeighbourConfig:
        for n in self.neighbours:
            if n.id == nid:
                return n
        raise KeyError(nid)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: Any, where: str = "broker") -> BrokerConfig:
        cfg = _build(cls, doc, where)
        assert isinstance(cfg, BrokerConfig)
        cfg.check(where)
        return cfg

    def check(self, where: str = "broker") -> None:
        if self.schema_version != SCHEMA_VERSION:
            raise ConfigError(
                f"{where}.schema_version: {self.schema_version} is not supported (expected {SCHEMA_VERSION})"
            )
        if self.routing not in routing_registry.ALGORITHMS:
            raise ConfigError(
                f"{where}.routing: unknown algorithm {self.routing!r}; "
                f"allowed: {', '.join(routing_registry.ALGORITHMS)}"
            )
        if self.routing in routing_registry.implemented():
            problems = routing_registry.check_params(self.routing, self.routing_params)
            if problems:
                raise ConfigError(f"{where}.routing_params.{problems[0]}")
        if self.matching not in MATCHING_ENGINES:
            raise ConfigError(
                f"{where}.matching: unknown engine {self.matching!r}; allowed: {', '.join(MATCHING_ENGINES)}"
            )
        if not 0 <= self.index < max(self.clusters, 1):
            raise ConfigError(f"{where}.index: {self.index} outside 0..{self.clusters - 1}")
        if self.link_capacity_msgs_per_s < 0:
            raise ConfigError(
                f"{where}.link_capacity_msgs_per_s: must be >= 0, got {self.link_capacity_msgs_per_s}"
            )
        if not 0 <= self.service_us < 3_600_000_000:
            raise ConfigError(f"{where}.service_us: must be in [0, 1 h), got {self.service_us}")
        if not 0 <= self.match_us_per_entry < 3_600_000_000:
            raise ConfigError(
                f"{where}.match_us_per_entry: must be in [0, 1 h), got {self.match_us_per_entry}"
            )
        if ":" not in self.listen:
            raise ConfigError(f"{where}.listen: expected host:port, got {self.listen!r}")
        seen = set()
        for k, n in enumerate(self.neighbours):
            if n.id in seen or n.id == self.id:
                raise ConfigError(f"{where}.neighbours[{k}].id: {n.id!r} is a duplicate or the broker itself")
            seen.add(n.id)
            if n.capacity_msgs_per_s is not None and n.capacity_msgs_per_s < 0:
                raise ConfigError(f"{where}.neighbours[{k}].capacity_msgs_per_s: must be >= 0")
            if (why := link_delay_problem(n.latency_ms, n.jitter_ms)) is not None:
                raise ConfigError(f"{where}.neighbours[{k}]: {why}")
        if self.congestion.window_ms <= 0:
            raise ConfigError(f"{where}.congestion.window_ms: must be > 0")
        self.limits.check(f"{where}.limits")


def _build(tp: Any, value: Any, where: str) -> Any:
    """Typed construction of the frozen dataclasses above, with errors that name the path."""
    origin = get_origin(tp)
    args = get_args(tp)
    if hasattr(tp, "__dataclass_fields__"):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected an object, got {type(value).__name__}")
        hints = get_type_hints(tp)
        names = {f.name for f in fields(tp)}
        unknown = sorted(set(value) - names)
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}")
        kwargs = {}
        for f in fields(tp):
            if f.name in value:
                kwargs[f.name] = _build(hints[f.name], value[f.name], f"{where}.{f.name}")
            elif f.default is MISSING and f.default_factory is MISSING:
                raise ConfigError(f"{where}.{f.name}: required field is missing")
        return tp(**kwargs)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{where}: expected a list, got {type(value).__name__}")
        return tuple(_build(args[0], v, f"{where}[{k}]") for k, v in enumerate(value))
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{where}: {value!r} is not one of {', '.join(map(repr, args))}")
        return value
    if origin is dict or tp is Any:
        if origin is dict and not isinstance(value, dict):
            raise ConfigError(f"{where}: expected an object, got {type(value).__name__}")
        return value
    if args and type(None) in args:  # Optional[X]
        if value is None:
            return None
        inner = next(a for a in args if a is not type(None))
        return _build(inner, value, where)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    raise ConfigError(f"{where}: unsupported type {tp!r}")


def dump_all(configs: list[BrokerConfig]) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "brokers": [c.to_json() for c in configs]}


def load(path: str | Path, broker_id: str | None = None) -> BrokerConfig:
    """Read one broker's config from a single-broker or an all-brokers file."""
    p = Path(path)
    doc = read_document(p, "broker config", ConfigError)
    if isinstance(doc, dict) and "brokers" in doc:
        docs = doc["brokers"]
        if not isinstance(docs, list):
            raise ConfigError(f"{p}: 'brokers' must be a list")
        for k, d in enumerate(docs):
            if isinstance(d, dict) and d.get("id") == broker_id:
                return BrokerConfig.from_json(d, f"{p}:brokers[{k}]")
        ids = [d.get("id") for d in docs if isinstance(d, dict)]
        raise ConfigError(f"{p}: no broker with id {broker_id!r}; the file has {ids}")
    cfg = BrokerConfig.from_json(doc, str(p))
    if broker_id is not None and cfg.id != broker_id:
        raise ConfigError(f"{p}.id: the file is for {cfg.id!r}, not {broker_id!r}")
    return cfg


def build_configs(
    scot: Any,
    addresses: dict[str, str],
    listen: dict[str, str] | None = None,
    log_paths: dict[str, str] | None = None,
    **common: Any,
) -> list[BrokerConfig]:
    """One config per broker of ``scot`` (a :class:`scotbed.topology.Scot`).

    ``addresses`` maps every broker id to the host:port its neighbours dial;
    ``listen`` (default: the same address) is what the broker binds;
    ``log_paths`` gives each broker's event log; ``common`` sets the other
    BrokerConfig fields (routing, matching, congestion, ...) for all brokers.
    """
    if isinstance(common.get("congestion"), dict):
        common["congestion"] = _build(CongestionConfig, common["congestion"], "congestion")
    if isinstance(common.get("limits"), dict):
        common["limits"] = _build(LimitsConfig, common["limits"], "limits")
    log_base = common.pop("log", LogConfig())
    if isinstance(log_base, dict):
        log_base = _build(LogConfig, log_base, "log")
    out = []
    for b in scot.brokers:
        neighbours = tuple(
            NeighbourConfig(n.id, n.kind, n.type, n.cluster, n.region, addresses[n.id])
            for n in scot.neighbours(b.id)
        )
        log = log_base
        if log_paths is not None:
            log = LogConfig(**{**asdict(log_base), "path": log_paths[b.id]})
        cfg = BrokerConfig(
            id=b.id,
            vertex=b.vertex,
            index=b.index,
            type=b.type,
            listen=(listen or addresses)[b.id],
            neighbours=neighbours,
            clusters=scot.m,
            log=log,
            **common,
        )
        cfg.check(b.id)
        out.append(cfg)
    return out
