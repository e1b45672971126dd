"""The spec blocks of self-organising trees (DESIGN §10): ``topology.costs`` and
``topology.self_organising``. Defaults come from :mod:`scotbed.overlay`, their one home.

The models keep the spec's strictness (unknown keys, coerced types and non-finite numbers are
errors); :func:`problems` checks them against the rest of the spec.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from scotbed.broker import routing as routing_registry
from scotbed.overlay import interest
from scotbed.overlay.costs import DEFAULT_BROKER, DEFAULT_LINK, Costs, CostsError
from scotbed.overlay.heuristics import HEURISTICS

if TYPE_CHECKING:
    from scotbed.orchestrator.spec import Spec


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True, allow_inf_nan=False)


class CostsSpec(_Strict):
    """c_e for every pair of vertices that may be linked, p_v for every vertex; unlisted pairs and
    vertices cost the defaults."""

    default_link: float = Field(default=DEFAULT_LINK, ge=0, description="c_e of a pair not listed")
    default_broker: float = Field(default=DEFAULT_BROKER, ge=0, description="p_v of a vertex not listed")
    links: list[list[str | int | float]] = Field(
        default_factory=list, description="[u, v, c_uv] by vertex name"
    )
    brokers: dict[str, float] = Field(default_factory=dict, description="vertex name -> p_v")
    alpha: float | None = Field(
        default=None, ge=0, le=1, description="processing weight α: c_e·(1−α)/0.5, p_v·α/0.5 (§5.3)"
    )

    def costs(self) -> Costs:
        return Costs.from_mapping(self.model_dump(), where="topology.costs")


class SelfOrganisingSpec(_Strict):
    """The topology manager beside routing (paper §4): which heuristic, its neighbourhood and
    period, and the damping knobs (off by default)."""

    heuristic: str = Field(description="ci (cost and interest), lmst or lmit")
    eta: int = Field(default=4, ge=1, description="broadcast radius η in hops")
    period_ms: float = Field(default=1000.0, gt=0, description="broadcast interval Δt in ms")
    hysteresis: float = Field(default=0.0, ge=0, lt=1, description="relative gain a request must exceed")
    cooldown_ms: float = Field(
        default=0.0, ge=0, description="pause of a broker after a swap it took part in"
    )
    cache_size: int = Field(default=interest.CACHE_SIZE, ge=1, description="notification ids per cache")
    bloom_bits: int = Field(default=interest.BLOOM_BITS, ge=8, description="Bloom filter size in bits")
    bloom_hashes: int = Field(default=interest.BLOOM_HASHES, ge=1, description="hash functions per id")

    @field_validator("heuristic")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in HEURISTICS:
            raise ValueError(f"unknown heuristic; allowed: {', '.join(HEURISTICS)}")
        return v


def problems(spec: Spec) -> list[str]:
    """Cross checks: costs name real vertices once each; a self-organising overlay is a tree."""
    t: Any = spec.topology
    out: list[str] = []
    if t.costs is None and t.self_organising is None:
        return out
    if t.costs is not None:
        try:
            costs = t.costs.costs()
        except CostsError as e:
            out.append(str(e))
        else:
            named = {v for e in costs.links for v in e} | set(costs.brokers)
            vertices = _vertices(spec)
            unknown = sorted(named - vertices) if vertices is not None else []
            if unknown:
                out.append(f"topology.costs: {', '.join(unknown)} not vertices of topology.acyclic")
    if t.self_organising is not None:
        if t.m != 1:
            out.append("topology.self_organising: needs an acyclic overlay (kind tree, or connectivity 1)")
        if spec.routing in routing_registry.ALGORITHMS and not _dynamic(spec.routing):
            out.append(
                f"topology.self_organising: routing {spec.routing!r} does not follow dynamic links; "
                f"the topology manager needs one that does (docs/self-organising.md)"
            )
    return out


def _dynamic(routing: str) -> bool:
    return bool(routing_registry.algorithm_class(routing).dynamic_links)


def manager_block(spec: Spec, scot: Any) -> dict[str, Any]:
    """The brokers' ``topology_manager`` block: the settings, the costs and the initial tree over
    broker ids (a self-organising overlay has one broker per vertex); {} when off."""
    t: Any = spec.topology
    if t.self_organising is None:
        return {}
    bid = {b.vertex: b.id for b in scot.brokers}
    raw = t.costs.model_dump() if t.costs is not None else {}
    costs = {
        **raw,
        "links": [[bid[str(u)], bid[str(v)], c] for u, v, c in raw.get("links", [])],
        "brokers": {bid[k]: p for k, p in raw.get("brokers", {}).items()},
    }
    tree = sorted({tuple(sorted((b.id, n.id))) for b in scot.brokers for n in scot.neighbours(b.id)})
    return {**t.self_organising.model_dump(), "costs": costs, "tree": [list(e) for e in tree]}


def _vertices(spec: Spec) -> frozenset[str] | None:
    from scotbed.orchestrator.spec import SpecError, build_factor

    try:
        return frozenset(build_factor(spec).vertices)
    except SpecError:
        return None  # the factor's own problem is reported where it is built
