"""Link and broker costs (docs/design.md §10 ``topology.costs``) and the paper's delivery cost (Eq. 1/2).

A cost table covers every pair of brokers that may be linked, not only the current tree's links:
the heuristics price links that do not exist yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scotbed.errors import UserError

DEFAULT_LINK = 10.0
DEFAULT_BROKER = 1.0
NEUTRAL_ALPHA = 0.5  # the processing weight at which listed costs are taken as they stand (§5.3)

Edge = tuple[str, str]


def edge(u: str, v: str) -> Edge:
    """The one spelling of an undirected link: its two ends in sorted order."""
    if u == v:
        raise ValueError(f"a link needs two brokers, got {u!r} twice")
    return (u, v) if u < v else (v, u)


class CostsError(UserError):
    """A ``topology.costs`` block that cannot be used; the message names the key."""


@dataclass(frozen=True)
class Costs:
    """c_e per link and p_v per broker; pairs not listed cost the defaults."""

    default_link: float = DEFAULT_LINK
    default_broker: float = DEFAULT_BROKER
    links: Mapping[Edge, float] = field(default_factory=dict)
    brokers: Mapping[str, float] = field(default_factory=dict)

    def link(self, u: str, v: str) -> float:
        return self.links.get(edge(u, v), self.default_link)

    def broker(self, v: str) -> float:
        return self.brokers.get(v, self.default_broker)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any] | None, where: str = "topology.costs") -> Costs:
        """Parse the spec block; every number must be finite and non-negative. ``alpha`` (optional)
        weights processing against communication: see :func:`weighted`."""
        raw = dict(raw or {})
        unknown = sorted(set(raw) - {"default_link", "default_broker", "links", "brokers", "alpha"})
        if unknown:
            raise CostsError(f"{where}: unknown key(s) {unknown}")
        links: dict[Edge, float] = {}
        for n, item in enumerate(raw.get("links") or []):
            if not isinstance(item, (list, tuple)) or len(item) != 3:
                raise CostsError(f"{where}.links[{n}]: want [u, v, cost], got {item!r}")
            u, v, c = item
            try:
                key = edge(str(u), str(v))
            except ValueError as exc:
                raise CostsError(f"{where}.links[{n}]: {exc}") from None
            if key in links:
                raise CostsError(f"{where}.links[{n}]: link {u}-{v} listed twice")
            links[key] = checked_cost(c, f"{where}.links[{n}]")
        brokers = {
            str(k): checked_cost(v, f"{where}.brokers.{k}") for k, v in (raw.get("brokers") or {}).items()
        }
        listed = cls(
            default_link=checked_cost(raw.get("default_link", DEFAULT_LINK), f"{where}.default_link"),
            default_broker=checked_cost(raw.get("default_broker", DEFAULT_BROKER), f"{where}.default_broker"),
            links=links,
            brokers=brokers,
        )
        alpha = raw.get("alpha")
        if alpha is None:
            return listed
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
            raise CostsError(f"{where}.alpha: want a number in [0, 1], got {alpha!r}")
        return weighted(listed, float(alpha))


def weighted(costs: Costs, alpha: float) -> Costs:
    """The paper's processing weight α (§5.3: c_max = (1 − α)·Γ, p_max = α·Γ): every c_e scaled by
    (1 − α)/0.5 and every p_v by α/0.5, so costs listed for c_max = p_max (the paper's default,
    α = 0.5) become those of α, and one spec serves the whole α campaign."""
    c, p = (1 - alpha) / NEUTRAL_ALPHA, alpha / NEUTRAL_ALPHA
    return Costs(
        default_link=costs.default_link * c,
        default_broker=costs.default_broker * p,
        links={e: x * c for e, x in costs.links.items()},
        brokers={v: x * p for v, x in costs.brokers.items()},
    )


def checked_cost(value: Any, where: str) -> float:
    """A cost from the spec: a finite number >= 0 (``where`` names the key in the error)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not value >= 0
        or value == float("inf")
    ):
        raise CostsError(f"{where}: want a finite number >= 0, got {value!r}")
    return float(value)


def link_delay_ms(cost: float, ms_per_cost: float) -> float:
    """Cost-derived link latency (``topology.self_organising.latency_ms_per_cost``): a link's
    one-way delay is its c_uv times the knob, so a dear link is a slow one (the paper's costs stand
    for distance in a physical topology); 0 turns the emulation off."""
    return cost * ms_per_cost


def delivery_tree(
    adjacency: Mapping[str, Iterable[str]], members: Iterable[str]
) -> tuple[set[str], set[Edge]]:
    """The minimal subtree of a tree that spans ``members`` (V(n) = publisher ∪ subscribers).

    Prunes leaves that are not members until none is left; what remains is the Steiner subtree.
    """
    want = set(members)
    nodes = {v for v in adjacency}
    nbrs = {v: set(adjacency[v]) for v in nodes}
    leaves = [v for v in nodes if len(nbrs[v]) <= 1 and v not in want]
    while leaves:
        v = leaves.pop()
        if v not in nodes:
            continue
        nodes.discard(v)
        for u in nbrs.pop(v):
            nbrs[u].discard(v)
            if len(nbrs[u]) <= 1 and u not in want:
                leaves.append(u)
    if not want:
        return set(), set()
    edges = {edge(u, v) for u in nodes for v in nbrs[u]}
    return nodes, edges


def notification_cost(
    adjacency: Mapping[str, Iterable[str]], costs: Costs, publisher: str, subscribers: Iterable[str]
) -> float:
    """Eq. 1: every broker of the delivery tree processes n once, every link carries it once."""
    nodes, edges = delivery_tree(adjacency, {publisher, *subscribers})
    return sum(costs.broker(v) for v in nodes) + sum(costs.link(u, v) for u, v in edges)


def total_cost(
    adjacency: Mapping[str, Iterable[str]], costs: Costs, notifications: Iterable[tuple[str, Iterable[str]]]
) -> float:
    """Eq. 2: the sum of Eq. 1 over (publisher, subscribers) pairs."""
    return sum(notification_cost(adjacency, costs, p, s) for p, s in notifications)
