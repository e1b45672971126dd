"""The seed paper's delivery cost (Eq. 1/2) as a real run paid it, over time, from broker events.

Eq. 1 charges a notification p_v at every broker of its delivery tree and c_e on every tree link. A
run's events give exactly that, with no knowledge of the tree: a broker that handled the
notification logged ``notif_in`` once (``link`` "" at the publisher's broker), a link that carried
it logged ``notif_out`` at its sending end. So the realised cost of a window is Σ p over its
``notif_in`` plus Σ c over its ``notif_out``; on a tree that is Eq. 2 over the window's
notifications, whatever the overlay was at the time. Costs are over vertex names (docs/design.md §10):
``vertex_of`` maps a broker id to its vertex. With cost redraws each event is priced with the
table in force at its broker then (:class:`~scotbed.selforg.redraws.InForce`; a ``notif_out`` with
its sender's). Pure logic over event dicts; the run-directory reader and the report plot call it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scotbed.contract import COST_REDRAW, LINK_UP, NOTIF_IN, NOTIF_OUT
from scotbed.selforg.costs import Costs
from scotbed.selforg.redraws import InForce


@dataclass(frozen=True, slots=True)
class Window:
    """One time window of a run: Eq. 2 as paid, and the notifications published in it."""

    start_ns: int
    cost: float
    published: int  # notifications whose publisher's broker handled them in this window

    @property
    def per_notification(self) -> float:
        return self.cost / self.published if self.published else 0.0


def switches(events: Iterable[Mapping[str, Any]]) -> dict[str, list[tuple[int, int]]]:
    """Per broker, when it switched to which cost table (its ``cost_redraw`` events, in time order)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for ev in sorted((e for e in events if e["ev"] == COST_REDRAW), key=lambda e: int(e["ts_ns"])):
        out.setdefault(ev["node"], []).append((int(ev["ts_ns"]), int(ev["n"])))
    return out


def event_cost(ev: Mapping[str, Any], costs: Costs | InForce, vertex_of: Mapping[str, str]) -> float:
    """What one event adds to Eq. 2: p_v for a ``notif_in``, c_e for a ``notif_out``, else 0."""
    if isinstance(costs, InForce):
        costs = costs.at(ev["node"], int(ev["ts_ns"]))
    if ev["ev"] == NOTIF_IN:
        return costs.broker(vertex_of[ev["node"]])
    if ev["ev"] == NOTIF_OUT:
        return costs.link(vertex_of[ev["node"]], vertex_of[ev["link"]])
    return 0.0


def realised_cost(
    events: Iterable[Mapping[str, Any]], costs: Costs | InForce, vertex_of: Mapping[str, str]
) -> float:
    """Eq. 2 as the run paid it over ``events``."""
    return sum(event_cost(ev, costs, vertex_of) for ev in events)


def cost_over_time(
    events: Iterable[Mapping[str, Any]], costs: Costs | InForce, vertex_of: Mapping[str, str], window_ns: int
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
    counts: Iterable[tuple[int, str, str, str, int] | tuple[int, str, str, str, int, int]],
    costs: Costs | InForce,
    vertex_of: Mapping[str, str],
    t0: int,
    window_ns: int,
) -> list[Window]:
    """:func:`cost_over_time` from per-window counts ``(window, ev, node, link, n[, table])`` (what
    Spark groups; ``table``: the cost table in force, 0 if absent)."""
    rows = list(counts)
    if not rows:
        return []
    tables = InForce.of(costs).tables
    n = max(r[0] for r in rows) + 1
    cost, published = [0.0] * n, [0] * n
    for k, ev, node, link, count, *table in rows:
        priced = tables[table[0] if table else 0]
        cost[k] += count * event_cost({"ev": ev, "node": node, "link": link}, priced, vertex_of)
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
    rows: Iterable[tuple[str, str, str, int, int] | tuple[str, str, str, int, int, int]],
    costs: Costs | InForce,
    vertex_of: Mapping[str, str],
) -> Overhead:
    """From ``topo_out`` counts ``(node, link, kind, messages, bytes[, table])`` (the sender's table)."""
    tables = InForce.of(costs).tables
    by_kind: dict[str, int] = {}
    size, cost = 0, 0.0
    for node, link, kind, n, b, *table in rows:
        c = tables[table[0] if table else 0]
        by_kind[kind] = by_kind.get(kind, 0) + n
        size += b
        cost += n * (c.link(vertex_of[node], vertex_of[link]) + c.broker(vertex_of[link]))
    return Overhead(sum(by_kind.values()), size, cost, dict(sorted(by_kind.items())))
