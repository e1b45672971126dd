"""Cost redraws on a timeline (paper §5: link and broker costs change while the tree runs).

``topology.costs.redraws`` lists ``{at_s, what}``: ``links`` or ``brokers`` draws every pair's c_e
(every vertex's p_v) uniformly in [0, ``max``] from ``random.Random(seed)`` (seed: the redraw's
number, 1, 2, … unless given), with the simulator's own draw functions; ``set`` replaces the listed
entries (``links``/``brokers``) and keeps the rest. Every table is computed here, once, from the
spec: the orchestrator hands the brokers the whole list and the analysis recomputes the same one,
so nobody draws at run time.

On real brokers the sequencer (the least broker id) starts redraw k at ``at_s`` after its manager
started and a ``costs`` flood carries k over the tree (:class:`Schedule`); each broker logs
``cost_redraw`` when it switches, and the analysis prices each event with the table in force at its
broker then (:class:`InForce`).
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scotbed.selforg.costs import Costs, CostsError, checked_cost
from scotbed.selforg.simload import C_MAX, P_MAX, draw_brokers, draw_links

WHATS = ("links", "brokers", "set")
REDRAW = "costs"  # the topology manager's control kind of the flood


@dataclass(frozen=True)
class Redraw:
    """One entry of ``topology.costs.redraws``."""

    at_s: float
    what: str
    max: float | None = None
    seed: int | None = None
    set: Costs | None = None  # what ``set`` writes over the table before it


def parse(raw: Mapping[str, Any] | None, where: str = "topology.costs") -> tuple[Costs, list[Redraw]]:
    """The costs block with its ``redraws``: the initial table and the timeline, checked."""
    raw = dict(raw or {})
    items = raw.pop("redraws", None) or []
    base = Costs.from_mapping(raw, where)
    out: list[Redraw] = []
    for k, item in enumerate(items):
        w = f"{where}.redraws[{k}]"
        r = dict(item)
        what, at_s = r.pop("what", None), r.pop("at_s", None)
        if what not in WHATS:
            raise CostsError(f"{w}.what: want one of {', '.join(WHATS)}, got {what!r}")
        if isinstance(at_s, bool) or not isinstance(at_s, (int, float)) or not 0 <= at_s < float("inf"):
            raise CostsError(f"{w}.at_s: want seconds >= 0, got {at_s!r}")
        if out and at_s <= out[-1].at_s:
            raise CostsError(f"{w}.at_s: {at_s} is not after the redraw before ({out[-1].at_s})")
        r = {key: v for key, v in r.items() if v is not None}
        allowed = {"links", "brokers"} if what == "set" else {"max", "seed"}
        if set(r) - allowed:
            raise CostsError(f"{w}: {sorted(set(r) - allowed)} not allowed with what: {what}")
        if what == "set":
            if not r:
                raise CostsError(f"{w}: what: set needs links and/or brokers")
            out.append(Redraw(float(at_s), what, set=Costs.from_mapping(r, w)))
            continue
        top = None if "max" not in r else checked_cost(r["max"], f"{w}.max")
        seed = r.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise CostsError(f"{w}.seed: want an integer, got {seed!r}")
        out.append(Redraw(float(at_s), what, top, seed))
    return base, out


def tables(base: Costs, redraws: Sequence[Redraw], names: Sequence[str]) -> list[Costs]:
    """Table 0 is ``base``; table k is redraw k applied to table k − 1 (``names``: the vertices)."""
    names = sorted(names)
    out = [base]
    for k, r in enumerate(redraws, start=1):
        prev = out[-1]
        rng = random.Random(k if r.seed is None else r.seed)
        if r.what == "links":
            links = draw_links(names, C_MAX if r.max is None else r.max, rng)
            out.append(Costs(prev.default_link, prev.default_broker, links, prev.brokers))
        elif r.what == "brokers":
            brokers = draw_brokers(names, P_MAX if r.max is None else r.max, rng)
            out.append(Costs(prev.default_link, prev.default_broker, prev.links, brokers))
        else:
            assert r.set is not None
            links, brokers = {**prev.links, **r.set.links}, {**prev.brokers, **r.set.brokers}
            out.append(Costs(prev.default_link, prev.default_broker, links, brokers))
    return out


def renamed(costs: Costs, name: Mapping[str, str]) -> dict[str, Any]:
    """A table as a ``topology.costs`` mapping with vertices renamed (vertex → broker id)."""
    return {
        "default_link": costs.default_link,
        "default_broker": costs.default_broker,
        "links": [[name[u], name[v], c] for (u, v), c in sorted(costs.links.items())],
        "brokers": {name[v]: p for v, p in sorted(costs.brokers.items())},
    }


@dataclass
class Schedule:
    """The cost tables one broker's manager holds and which is in force. The sequencer starts
    redraw k at ``at_s[k-1]``; a broker switches on a higher number than its own and passes it on."""

    tables: list[Costs]
    at_s: list[float]  # when table k + 1 starts, seconds after the sequencer's manager started
    index: int = 0

    @property
    def costs(self) -> Costs:
        return self.tables[self.index]

    def due(self, elapsed_s: float) -> int:
        """The table the sequencer should be on ``elapsed_s`` after it started."""
        return bisect.bisect_right(self.at_s, elapsed_s)

    def learn(self, index: int) -> bool:
        """Switch to table ``index`` if it is newer than mine; True if I switched."""
        if not 0 <= index < len(self.tables):
            raise ValueError(f"cost table {index} unknown; this broker holds 0..{len(self.tables) - 1}")
        if index <= self.index:
            return False
        self.index = index
        return True


def schedule_of(block: Mapping[str, Any]) -> Schedule:
    """The broker block: ``costs`` (table 0) and ``redraws`` as ``[{at_s, costs}]`` (the tables)."""
    redraws = list(block.get("redraws") or [])
    first = Costs.from_mapping(block.get("costs"), "topology_manager.costs")
    rest = [Costs.from_mapping(r["costs"], f"topology_manager.redraws[{k}]") for k, r in enumerate(redraws)]
    return Schedule([first, *rest], [float(r["at_s"]) for r in redraws])


@dataclass(frozen=True)
class InForce:
    """Which table priced a broker's event: the last ``cost_redraw`` it logged before the event."""

    tables: Sequence[Costs]
    switches: Mapping[str, Sequence[tuple[int, int]]] = field(default_factory=dict)  # node -> (ts_ns, k)

    @classmethod
    def of(cls, costs: Costs | InForce) -> InForce:
        return costs if isinstance(costs, InForce) else cls([costs])

    def index(self, node: str, ts_ns: int) -> int:
        k = 0
        for ts, idx in self.switches.get(node, ()):
            if ts <= ts_ns:
                k = idx
        return k

    def at(self, node: str, ts_ns: int) -> Costs:
        return self.tables[self.index(node, ts_ns)]
