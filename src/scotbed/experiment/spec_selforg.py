"""The spec blocks of self-organising trees (docs/design.md §10): ``topology.costs`` and
``topology.self_organising``. Defaults come from :mod:`scotbed.selforg`, their one home.

The models keep the spec's strictness (unknown keys, coerced types and non-finite numbers are
errors); :func:`problems` checks them against the rest of the spec.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from scotbed import bounds
from scotbed import routing as routing_registry
from scotbed.experiment import spec_factors
from scotbed.experiment.spec_errors import SpecError
from scotbed.selforg import interest
from scotbed.selforg import redraws as timelines
from scotbed.selforg.costs import DEFAULT_BROKER, DEFAULT_LINK, Costs, CostsError
from scotbed.selforg.heuristics import HEURISTICS

if TYPE_CHECKING:
    from scotbed.experiment.spec import Spec


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True, allow_inf_nan=False)


class RedrawSpec(_Strict):
    """One cost redraw on the timeline (:mod:`scotbed.selforg.redraws`)."""

    at_s: float = Field(
        ge=0, le=bounds.MAX_SECONDS, description="seconds after the sequencer's topology manager started"
    )
    what: Literal["links", "brokers", "set"] = Field(description="draw all c_e, all p_v, or set some")
    max: float | None = Field(default=None, ge=0, description="links|brokers: draw uniformly in [0, max]")
    seed: int | None = Field(
        ge=0,
        le=bounds.MAX_SEED,
        default=None,
        description="links|brokers: the draw's seed (default: its number)",
    )
    links: list[list[str | int | float]] | None = Field(default=None, description="set: [u, v, c_uv]")
    brokers: dict[str, float] | None = Field(default=None, description="set: vertex name -> p_v")


class CostsSpec(_Strict):
    """c_e for every pair of vertices that may be linked, p_v for every vertex; unlisted pairs and
    vertices cost the defaults."""

    default_link: float = Field(default=DEFAULT_LINK, ge=0, description="c_e of a pair not listed")
    default_broker: float = Field(default=DEFAULT_BROKER, ge=0, description="p_v of a vertex not listed")
    links: list[list[str | int | float]] = Field(
        default_factory=list, description="[u, v, c_uv] by vertex name"
    )
    brokers: dict[str, float] = Field(default_factory=dict, description="vertex name -> p_v")
    redraws: list[RedrawSpec] = Field(default_factory=list, description="the cost timeline, in at_s order")
    alpha: float | None = Field(
        default=None, ge=0, le=1, description="processing weight α: c_e·(1−α)/0.5, p_v·α/0.5 (§5.3)"
    )

    def costs(self) -> Costs:
        return self.timeline()[0]

    def timeline(self) -> tuple[Costs, list[timelines.Redraw]]:
        return timelines.parse(self.model_dump(), where="topology.costs")


class SelfOrganisingSpec(_Strict):
    """The topology manager beside routing (paper §4): which heuristic, its neighbourhood and
    period, and the damping knobs (off by default)."""

    heuristic: str = Field(description="ci (cost and interest), lmst or lmit")
    eta: int = Field(default=4, ge=1, le=bounds.MAX_BROKERS, description="broadcast radius η in hops")
    period_ms: float = Field(
        default=1000.0, gt=0, le=bounds.MAX_SECONDS * 1000, description="broadcast interval Δt in ms"
    )
    hysteresis: float = Field(default=0.0, ge=0, lt=1, description="relative gain a request must exceed")
    cooldown_ms: float = Field(
        default=0.0,
        ge=0,
        le=bounds.MAX_SECONDS * 1000,
        description="pause of a broker after a swap it took part in",
    )
    cache_size: int = Field(
        default=interest.CACHE_SIZE,
        ge=1,
        le=bounds.MAX_INTEREST_CACHE,
        description="notification ids per cache",
    )
    bloom_bits: int = Field(
        default=interest.BLOOM_BITS, ge=8, le=bounds.MAX_BLOOM_BITS, description="Bloom filter size in bits"
    )
    bloom_hashes: int = Field(
        default=interest.BLOOM_HASHES, ge=1, le=bounds.MAX_BLOOM_HASHES, description="hash functions per id"
    )
    latency_ms_per_cost: float = Field(
        default=0.0, ge=0, le=1000, description="each link's one-way delay: c_uv times this, ms (0: off)"
    )

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
            costs, timeline = t.costs.timeline()
        except CostsError as e:
            out.append(str(e))
        else:
            named = {v for c in [costs, *(r.set for r in timeline if r.set)] for e in c.links for v in e}
            named |= {v for c in [costs, *(r.set for r in timeline if r.set)] for v in c.brokers}
            vertices = _vertices(spec)
            unknown = sorted(named - vertices) if vertices is not None else []
            if unknown:
                out.append(f"topology.costs: {', '.join(unknown)} not vertices of topology.acyclic")
            if timeline and t.self_organising is None:
                out.append("topology.costs.redraws: need topology.self_organising (its managers apply them)")
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
    base, timeline = t.costs.timeline() if t.costs is not None else (Costs(), [])
    costs = [timelines.renamed(c, bid) for c in timelines.tables(base, timeline, sorted(bid))]
    tree = sorted({tuple(sorted((b.id, n.id))) for b in scot.brokers for n in scot.neighbours(b.id)})
    block = {**t.self_organising.model_dump(), "costs": costs[0], "tree": [list(e) for e in tree]}
    if timeline:
        block["redraws"] = [{"at_s": r.at_s, "costs": c} for r, c in zip(timeline, costs[1:], strict=True)]
    return block


def _vertices(spec: Spec) -> frozenset[str] | None:
    try:
        return frozenset(spec_factors.build(spec.topology.acyclic, spec.seed, spec.base_dir).vertices)
    except SpecError:
        return None  # the factor's own problem is reported where it is built
