"""From a spec and an overlay to what gets deployed: broker configs and client placement.

Pure: addresses, listen addresses and log paths come from the caller (each
backend knows its own), so the same plan serves local processes, compose
and Kubernetes.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from scotbed import topology as topo
from scotbed.broker import metrics
from scotbed.config import BrokerConfig, build_configs
from scotbed.experiment import spec_selforg
from scotbed.experiment.spec import Spec, SpecError
from scotbed.orchestrator import faults


def make_run_id(name: str, when: datetime | None = None, token: str | None = None) -> str:
    """``<name>-<UTC yyyymmddThhmmss>-<8 hex>`` (docs/design.md §5); at most 63 characters for a
    38-character name, so it fits a Kubernetes label value."""
    when = when or datetime.now(UTC)
    return f"{name}-{when.astimezone(UTC):%Y%m%dT%H%M%S}-{token or secrets.token_hex(4)}"


def scaled_capacity(capacity: float, time_scale: float) -> float:
    """A link capacity slowed down with the rest of the experiment; 0 (unlimited) stays 0."""
    return capacity / time_scale if capacity > 0 else 0.0


def service_times(spec: Spec, scot: topo.Scot) -> dict[str, float]:
    """Each broker's service time in µs (``brokers``), × workload.time_scale; a vertex the overlay
    does not have is a :class:`SpecError` naming it."""
    b = spec.brokers
    unknown = sorted(set(b.service_us_at) - {x.vertex for x in scot.brokers})
    if unknown:
        raise SpecError(f"brokers.service_us_at: {', '.join(unknown)} not a vertex of the acyclic factor")
    ts = spec.workload.time_scale
    return {x.id: b.service_us_at.get(x.vertex, b.service_us) * ts for x in scot.brokers}


def broker_configs(
    spec: Spec,
    scot: topo.Scot,
    addresses: Mapping[str, str],
    *,
    listen: Mapping[str, str] | None = None,
    log_paths: Mapping[str, str] | None = None,
    run_id: str = "",
    prometheus_port: int | None = None,
) -> list[BrokerConfig]:
    """One :class:`BrokerConfig` per broker. Link capacities are divided by workload.time_scale;
    the per-kind overrides (aCOL/iCOL) become per-neighbour capacities."""
    links = spec.links
    ts = spec.workload.time_scale
    configs = build_configs(
        scot,
        dict(addresses),
        listen=dict(listen) if listen is not None else None,
        log_paths=dict(log_paths) if log_paths is not None else None,
        routing=spec.routing,
        routing_params=dict(spec.routing_params),
        matching=spec.matching,
        link_capacity_msgs_per_s=scaled_capacity(links.capacity_msgs_per_s, ts),
        congestion=spec.congestion.model_dump(),
        run_id=run_id,
        prometheus_port=prometheus_port,
        topology_manager=spec_selforg.manager_block(spec, scot),
    )
    per_kind = {topo.ACOL: links.acol_capacity_msgs_per_s, topo.ICOL: links.icol_capacity_msgs_per_s}
    delays = link_delays(spec)
    service = service_times(spec, scot)
    match_us = spec.brokers.match_us_per_entry * ts  # slowed down with the service time
    out = []
    for cfg in configs:
        neighbours = tuple(
            dataclasses.replace(
                n,
                capacity_msgs_per_s=n.capacity_msgs_per_s
                if per_kind[n.kind] is None
                else scaled_capacity(per_kind[n.kind] or 0.0, ts),
                latency_ms=delays[n.kind][0],
                jitter_ms=delays[n.kind][1],
            )
            for n in cfg.neighbours
        )
        out.append(
            dataclasses.replace(
                cfg, neighbours=neighbours, service_us=service[cfg.id], match_us_per_entry=match_us
            )
        )
    return out


def link_delays(spec: Spec) -> dict[str, tuple[float, float]]:
    """(latency_ms, jitter_ms) per neighbour kind (aCOL, iCOL), × time_scale."""
    links, ts = spec.links, spec.workload.time_scale

    def pick(v: float | None, default: float) -> float:
        return (default if v is None else v) * ts

    return {
        topo.ACOL: (
            pick(links.acol_latency_ms, links.latency_ms),
            pick(links.acol_jitter_ms, links.jitter_ms),
        ),
        topo.ICOL: (
            pick(links.icol_latency_ms, links.latency_ms),
            pick(links.icol_jitter_ms, links.jitter_ms),
        ),
    }


@dataclass(frozen=True)
class Addressing:
    """How one backend's brokers are reached, bind and log; ``{id}`` in a template is the broker id.

    The backend (or renderer) owns its addressing; :func:`deployed_configs` renders the configs
    with it once, and the backend deploys exactly those.
    """

    dial: str  # what neighbours dial, e.g. "{id}:50051"; "127.0.0.1:0": the launcher picks ports
    listen: str  # what the broker binds, e.g. "0.0.0.0:50051"
    log_path: str | None = None  # the broker's event log; None: the launcher's (the run's events/)
    metrics_port: int = (
        0  # the Prometheus endpoint's port when the spec has metrics on; 0: the launcher picks
    )

    def of(self, template: str, scot: topo.Scot) -> dict[str, str]:
        return {b.id: template.format(id=b.id) for b in scot.brokers}

    def metrics(self, configs: Iterable[BrokerConfig]) -> dict[str, str]:
        """{broker id: host:port of its /metrics} for configs rendered with this addressing, as deployed
        (a port the launcher picked once it is known); brokers without an endpoint are left out."""
        configs = list(configs)
        return metrics.addresses(configs, {c.id: self.dial.format(id=c.id) for c in configs})


def deployed_configs(spec: Spec, scot: topo.Scot, addressing: Addressing, run_id: str) -> list[BrokerConfig]:
    """The broker configs a backend deploys: the spec's settings with the backend's addressing."""
    return broker_configs(
        spec,
        scot,
        addressing.of(addressing.dial, scot),
        listen=addressing.of(addressing.listen, scot),
        log_paths=addressing.of(addressing.log_path, scot) if addressing.log_path else None,
        run_id=run_id,
        prometheus_port=addressing.metrics_port if spec.metrics.prometheus else None,
    )


@dataclass(frozen=True)
class ClientPlan:
    """Host broker of every client: ``s<k>``, ``p<k>`` and, with an HRP, ``h0`` (see client_ids)."""

    subscribers: dict[str, str]
    publishers: dict[str, str]
    hrp: dict[str, str]

    def all(self) -> dict[str, str]:
        return {**self.subscribers, **self.publishers, **self.hrp}

    def to_json(self) -> dict[str, Any]:
        return {"subscribers": self.subscribers, "publishers": self.publishers, "hrp": self.hrp}


def client_ids(spec: Spec) -> tuple[list[str], list[str], list[str]]:
    """The workload's client names, as the workload plan names them (one naming rule for both)."""
    from scotbed.workloads.plan import client_names

    w = spec.workload
    return client_names(w.subscribers, w.publishers, w.hrp is not None)


def client_plan(spec: Spec, scot: topo.Scot) -> ClientPlan:
    """Seeded placement of every client (scotbed.topology.placement). Subscribers, publishers and
    the HRP draw from separate seeds, so adding publishers does not move the subscribers."""
    p = spec.workload.placement
    groups = client_ids(spec)
    placed = []
    for offset, clients in enumerate(groups):
        explicit = None
        if p.mode == "explicit":
            explicit = {c: b for c, b in (p.brokers or {}).items() if c in clients}
        try:
            placed.append(topo.placement(scot, clients, p.mode, spec.seed * 3 + offset, explicit, p.clusters))
        except topo.TopologyError as e:
            raise SpecError(f"workload.placement: {str(e).removeprefix('placement: ')}") from None
    if p.mode == "explicit":
        known = {c for g in groups for c in g}
        extra = sorted(set(p.brokers or {}) - known)
        if extra:
            spans = [f"{g[0]}..{g[-1]}" if len(g) > 1 else g[0] for g in groups if g]
            raise SpecError(
                f"workload.placement.brokers: {', '.join(extra)} not a client of this workload; "
                f"clients are {', '.join(spans) or 'none'}"
            )
    return ClientPlan(*placed)


def with_clients_at(plan: Any, addresses: Mapping[str, str], release_mode: Literal["auto", "file"]) -> Any:
    """``plan`` with each broker at the address its clients dial and publishers released by ``release_mode``:
    the subscriptions and quotes stay those generated once."""
    brokers = tuple(dataclasses.replace(b, address=addresses[b.id]) for b in plan.brokers)
    return dataclasses.replace(
        plan, brokers=brokers, release=dataclasses.replace(plan.release, mode=release_mode)
    )


def workload_plan(
    spec: Spec,
    scot: topo.Scot,
    addresses: Mapping[str, str],
    *,
    run_id: str = "",
    release_mode: Literal["auto", "file"] = "auto",
) -> Any:
    """The workload plan (:class:`scotbed.workloads.plan.Plan`) for the clients placed by
    :func:`client_plan`; a workload the generators cannot build is a :class:`SpecError` naming it."""
    from scotbed.workloads import plan as wplan

    try:
        plan = wplan.build_plan(
            spec.workload.params(spec.base_dir),
            scot,
            addresses,
            client_plan(spec, scot).all(),
            spec.seed,
            run_id=run_id,
            release=wplan.ReleaseSpec(mode=release_mode, quiescence_timeout_s=spec.timeouts.quiescent_s),
        )
    except ValueError as e:  # PlanError and the generators' ValueErrors
        msg = str(e)
        raise SpecError(msg if msg.startswith("workload") else f"workload: {msg}") from None
    down = faults.outages(list(spec.faults or []), spec.timeouts.ready_s)
    brokers = tuple(dataclasses.replace(b, outages=down.get(b.id, ())) for b in plan.brokers)
    # the Locust master's own subscribe bound is the spec's, not the plan's default
    return dataclasses.replace(
        plan, brokers=brokers, timeout_s=spec.timeouts.run_s, subscribe_timeout_s=spec.timeouts.quiescent_s
    )
