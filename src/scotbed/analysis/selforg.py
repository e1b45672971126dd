"""The seed paper's delivery cost (Eq. 1/2) as a real run paid it, over time, from broker events.

Eq. 1 charges a notification p_v at every broker of its delivery tree and c_e on every tree link. A
run's events give exactly that, with no knowledge of the tree: a broker that handled the
notification logged ``notif_in`` once (``link`` "" at the publisher's broker), a link that carried
it logged ``notif_out`` at its sending end. So the realised cost of a window is Σ p over its
``notif_in`` plus Σ c over its ``notif_out``; on a tree that is Eq. 2 over the window's
notifications, whatever the overlay was at the time. Costs are over vertex names (DESIGN §10):
``vertex_of`` maps a broker id to its vertex. Pure logic over event dicts; the run-directory
reader and the report plot call it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scotbed.contract import LINK_UP, NOTIF_IN, NOTIF_OUT
from scotbed.overlay.costs import Costs


@dataclass(frozen=True, slots=True)
class Window:
    """One time window of a run: Eq. 2 as paid, and the notifications published in it."""

    start_ns: int
    cost: float
    published: int  # notifications whose publisher's broker handled them in this window

    @property
    def per_notification(self) -> float:
        return self.cost / self.published if self.published else 0.0


def event_cost(ev: Mapping[str, Any], costs: Costs, vertex_of: Mapping[str, str]) -> float:
    """What one event adds to Eq. 2: p_v for a ``notif_in``, c_e for a ``notif_out``, else 0."""
    if ev["ev"] == NOTIF_IN:
        return costs.broker(vertex_of[ev["node"]])
    if ev["ev"] == NOTIF_OUT:
        return costs.link(vertex_of[ev["node"]], vertex_of[ev["link"]])
    return 0.0


def realised_cost(events: Iterable[Mapping[str, Any]], costs: Costs, vertex_of: Mapping[str, str]) -> float:
    """Eq. 2 as the run paid it over ``events``."""
    return sum(event_cost(ev, costs, vertex_of) for ev in events)


def cost_over_time(
    events: Iterable[Mapping[str, Any]], costs: Costs, vertex_of: Mapping[str, str], window_ns: int
) -> list[Window]:
    """Eq. 2 paid per window of ``window_ns`` from the first event on; empty windows included."""
    if window_ns <= 0:
        raise ValueError(f"window_ns must be > 0, got {window_ns}")
    evs = [ev for ev in events if ev["ev"] in (NOTIF_IN, NOTIF_OUT)]
    if not evs:
        return []
    t0 = min(int(ev["ts_ns"]) for ev in evs)
    n = (max(int(ev["ts_ns"]) for ev in evs) - t0) // window_ns + 1
    cost, published = [0.0] * n, [0] * n
    for ev in evs:
        k = (int(ev["ts_ns"]) - t0) // window_ns
        cost[k] += event_cost(ev, costs, vertex_of)
        if ev["ev"] == NOTIF_IN and ev.get("link", "") == "":
            published[k] += 1
    return [Window(t0 + k * window_ns, cost[k], published[k]) for k in range(n)]


def reconfigurations(events: Iterable[Mapping[str, Any]]) -> int:
    """Links added to the overlay: each ``link_up`` is logged at both of the link's ends."""
    ups = sum(1 for ev in events if ev["ev"] == LINK_UP)
    return ups // 2


def windows_from_counts(
    counts: Iterable[tuple[int, str, str, str, int]],
    costs: Costs,
    vertex_of: Mapping[str, str],
    t0: int,
    window_ns: int,
) -> list[Window]:
    """:func:`cost_over_time` from per-window counts ``(window, ev, node, link, n)`` (what Spark groups)."""
    rows = list(counts)
    if not rows:
        return []
    n = max(r[0] for r in rows) + 1
    cost, published = [0.0] * n, [0] * n
    for k, ev, node, link, count in rows:
        cost[k] += count * event_cost({"ev": ev, "node": node, "link": link}, costs, vertex_of)
        if ev == NOTIF_IN and not link:
            published[k] += count
    return [Window(t0 + k * window_ns, cost[k], published[k]) for k in range(n)]


@dataclass(frozen=True, slots=True)
class Overhead:
    """The topology manager's own messages (``topo_out``): how many, their bytes, per kind, and what
    they cost in Eq. 1's units (c of the link plus p of the receiver, per message)."""

    messages: int
    bytes: int
    cost: float
    by_kind: dict[str, int]


def overhead(
    rows: Iterable[tuple[str, str, str, int, int]], costs: Costs, vertex_of: Mapping[str, str]
) -> Overhead:
    """From ``topo_out`` counts ``(node, link, kind, messages, bytes)``."""
    by_kind: dict[str, int] = {}
    size, cost = 0, 0.0
    for node, link, kind, n, b in rows:
        by_kind[kind] = by_kind.get(kind, 0) + n
        size += b
        cost += n * (costs.link(vertex_of[node], vertex_of[link]) + costs.broker(vertex_of[link]))
    return Overhead(sum(by_kind.values()), size, cost, dict(sorted(by_kind.items())))
