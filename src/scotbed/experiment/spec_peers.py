"""The spec blocks of peer runs (Vinifera, docs/design.md §10): ``topology: {kind: peers, n: ..., ...}``,
``workload.peers`` and ``routing_params`` mapped onto :class:`~scotbed.vinifera.config.PeerConfig`.

Defaults come from :mod:`scotbed.vinifera` (their one home); :func:`problems` checks a spec's routing
against its topology kind: peer algorithms run on peers only, and peers run peer algorithms only.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from scotbed import bounds, contract
from scotbed import routing as routing_registry
from scotbed.vinifera.config import PeerConfig
from scotbed.vinifera.workload import SKEWED, UNIFORM, Shape

if TYPE_CHECKING:
    from scotbed.experiment.spec import Spec

PEERS = contract.PEERS_KIND
#: peer processes a backend of processes runs (one host's limit): more is the simulator's job
MAX_PEER_PROCESSES = 100
#: peers the round simulator runs (``--backend sim``): the paper's 1,000 and ten times more
MAX_SIMULATED_PEERS = 10_000
_DEFAULT = PeerConfig()
#: PeerConfig fields a spec may set through routing_params (the rest come from the blocks below)
TUNABLE = ("k_sw", "k_f", "view_size", "shuffle_len", "refresh", "crt_ttl", "beta", "ring_cache", "max_hops")


#: the workload's shapes (scotbed.vinifera.workload), spelt out for the spec's schema
ShapeKind = Literal["uniform", "skewed"]
assert set(typing.get_args(ShapeKind)) == {UNIFORM, SKEWED}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True, allow_inf_nan=False)


class PeersSpec(_Strict):
    """The peers: how many, their id space and the attribute domains (every peer subscribes once)."""

    n: int = Field(
        ge=2,
        le=MAX_SIMULATED_PEERS,
        description="peers (a backend bounds it further: its max_peers, checked by preflight)",
    )
    id_space: int = Field(
        default=_DEFAULT.id_space, ge=16, le=bounds.MAX_PEER_ID_SPACE, description="M, the ring's id space"
    )
    attributes: list[str] = Field(default_factory=lambda: ["x", "y"], min_length=1, description="names")
    domain: list[float] = Field(default_factory=lambda: [0.0, 1000.0], min_length=2, max_length=2)


class ChurnSpec(_Strict):
    """Every ``every`` rounds of the publish phase, ``leaves`` random peers fail (SIGKILL)."""

    every: int = Field(ge=1, le=bounds.MAX_PEER_ROUNDS, description="rounds between failures")
    leaves: int = Field(default=1, ge=1, le=MAX_SIMULATED_PEERS, description="peers failing each time")


class PeersWorkloadSpec(_Strict):
    """The publish phase: gossip warm-up rounds, then ``rounds`` with ``events_per_round`` events."""

    subscriptions: ShapeKind = Field(default=cast(ShapeKind, UNIFORM), description="range centres")
    events: ShapeKind = Field(default=cast(ShapeKind, UNIFORM), description="event values")
    width: float = Field(default=Shape().width, gt=0, le=1, description="range width, share of the domain")
    warmup_rounds: int = Field(
        default=20, ge=1, le=bounds.MAX_PEER_ROUNDS, description="gossip rounds before the first event"
    )
    rounds: int = Field(default=5, ge=1, le=bounds.MAX_PEER_ROUNDS)
    events_per_round: int = Field(default=4, ge=1, le=bounds.MAX_PEER_EVENTS_PER_ROUND)
    churn: ChurnSpec | None = None
    capacity: int | None = Field(
        default=None,
        ge=1,
        le=bounds.MAX_PEER_EVENTS_PER_ROUND,
        description="event messages a peer takes per round, the rest dropped (§V-D)",
    )


def lift(value: Any) -> Any:
    """``{kind: peers, n: 10, ...}`` -> ``{kind: peers, peers: {n: 10, ...}}`` (the spec's shape)."""
    if isinstance(value, dict) and value.get("kind") == PEERS and PEERS not in value:
        rest = {k: v for k, v in value.items() if k != "kind"}
        return {"kind": PEERS, PEERS: rest}
    return value


def peer_config(spec: Spec) -> PeerConfig:
    p = spec.topology.peers
    assert p is not None
    lo, hi = p.domain
    domains = tuple((a, lo, hi) for a in p.attributes)
    return dataclasses.replace(_DEFAULT, id_space=p.id_space, domains=domains, **spec.routing_params)


def problems(spec: Spec) -> list[str]:
    t, peer_algos = spec.topology, routing_registry.PEER_ALGORITHMS
    if t.kind != PEERS:
        if spec.routing in peer_algos:
            return [f"routing: {spec.routing!r} runs on peers only; use topology: {{kind: {PEERS}, n: ...}}"]
        if spec.workload.peers is not None:
            return [f"workload.peers: only used with topology kind {PEERS}"]
        return []
    if spec.routing not in peer_algos:
        return [f"routing: {spec.routing!r} does not run on peers; allowed: {', '.join(peer_algos)}"]
    out = []
    if spec.metrics.prometheus:
        out.append(
            f"metrics.prometheus: only brokers serve Prometheus metrics; topology kind {PEERS} has none"
        )
    if t.peers is None:
        out.append(f"topology: kind {PEERS} needs n (the number of peers)")
    elif t.peers.domain[0] >= t.peers.domain[1]:
        out.append(f"topology.domain: {t.peers.domain} is empty; want [min, max] with min < max")
    for k, v in spec.routing_params.items():
        if k not in TUNABLE:
            out.append(f"routing_params.{k}: not a peer parameter; allowed: {', '.join(TUNABLE)}")
        elif not (isinstance(v, int) and not isinstance(v, bool)) and not (k == "beta" and v is None):
            out.append(
                f"routing_params.{k}: {v!r} is not allowed; expected int (default {getattr(_DEFAULT, k)!r})"
            )
    return out
