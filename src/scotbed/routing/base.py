"""The routing plug-in interface.

A routing algorithm is pure: it sees its broker only through a
:class:`BrokerView` (identity, neighbours with kinds and types, the link status
table, a matcher factory) and answers every message with a :class:`Decision`:
which copies go to which next hop, which local subscriptions get the
notification, and how long matching took. The broker runtime does all I/O;
the same plug-ins run unchanged in the in-process simulator
(:mod:`scotbed.broker.sim`), which is how exact message counts are proved.

``from_hop`` is the neighbour a message came from, or ``None`` when it came
from a local client (subscriber or publisher) of this broker.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from scotbed.config import NeighbourConfig
from scotbed.filters import Filter
from scotbed.matching import Matcher
from scotbed.messages import (
    Message,
    Publication,
    Subscription,
    SubState,
    Unsubscription,
)
from scotbed.topology import ACOL, ICOL

LOCAL = ""  # the last hop of a subscription whose subscriber is attached to this broker


@dataclass(slots=True)
class Forward:
    hop: str
    msg: Message


@dataclass(slots=True)
class Decision:
    forwards: list[Forward] = field(default_factory=list)
    deliver: list[str] = field(default_factory=list)  # local sub_ids that receive a notification
    match_us: float | None = None  # time spent matching; None when this broker did not match
    matched: int | None = None  # routing-table entries that matched; None = len(deliver)
    steps: int | None = None  # matching steps (PST nodes visited); None = the table's last match
    stored: bool = False  # a subscription was stored (or an unsubscription removed state) here
    duplicate: bool = False  # the message was recognised as a duplicate and dropped


@dataclass(frozen=True, slots=True)
class LinkState:
    """One row of the link status table (OctopiS LST)."""

    ce: float = 0.0  # congestion element In/Out of the last window
    queue_len: int = 0  # envelopes waiting in the output queue
    overloaded: bool = False


class BrokerView(Protocol):
    """What a routing plug-in may know of its broker: nothing global."""

    @property
    def id(self) -> str: ...
    @property
    def vertex(self) -> str: ...
    @property
    def cluster(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def clusters(self) -> int: ...
    @property
    def neighbours(self) -> Mapping[str, NeighbourConfig]: ...
    @property
    def params(self) -> Mapping[str, Any]: ...

    def link_state(self, neighbour: str) -> LinkState: ...

    def make_matcher(self) -> Matcher: ...

    def clock(self) -> float:
        """Monotonic seconds: the host's on a broker process, virtual time in the sim backend. Time-dependent
        routing logic (selective pruning's history window) reads time only here."""
        ...


@dataclass(slots=True)
class Entry:
    """A routing-table row: {filter, last hop, CBV} plus what the logs need."""

    sub_id: str
    filter: Filter
    last_hop: str
    host_broker: str
    cbv: int = 0
    state: SubState = SubState.UNSPECIFIED


class RoutingTable:
    """Entries under caller-chosen keys, indexed by a matching engine."""

    def __init__(self, matcher: Matcher) -> None:
        self._matcher = matcher
        self.entries: dict[Hashable, Entry] = {}
        self.last_steps: int | None = None  # PST nodes the last match visited; None: not a tree engine

    def add(self, key: Hashable, entry: Entry) -> None:
        self.entries[key] = entry
        self._matcher.add(key, entry.filter)

    def remove(self, key: Hashable) -> Entry | None:
        entry = self.entries.pop(key, None)
        if entry is not None:
            self._matcher.remove(key)
        return entry

    def get(self, key: Hashable) -> Entry | None:
        return self.entries.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def match(self, attrs: Mapping[str, Any]) -> tuple[list[Entry], float]:
        """Matching entries and the matching time in microseconds."""
        t0 = time.perf_counter_ns()
        keys = self._matcher.match(attrs)
        us = (time.perf_counter_ns() - t0) / 1000.0
        self.last_steps = getattr(self._matcher, "last_steps", None)
        return list(map(self.entries.__getitem__, keys)), us

    def values(self) -> Iterable[Entry]:
        return self.entries.values()


def steps_of(*tables: RoutingTable) -> int | None:
    """The matching steps of the tables one decision matched, summed; None when no engine counts them."""
    counts = [t.last_steps for t in tables if t.last_steps is not None]
    return sum(counts) if counts else None


class RoutingAlgorithm(ABC):
    """Base of every routing plug-in; one module per algorithm."""

    #: the spec name, set by the registry (:mod:`scotbed.routing`) when it loads the class
    name: ClassVar[str] = ""
    #: the overlay must be acyclic (a tree, m = 1)
    requires_acyclic: ClassVar[bool] = False
    #: the overlay must be a clustered SCOT with m >= 2
    requires_clusters: ClassVar[bool] = False
    #: ``routing_params`` this algorithm reads, with their defaults (a value's type is the param's type)
    params: ClassVar[Mapping[str, Any]] = {}
    #: the plug-in follows a changing neighbour set (self-organising trees): :meth:`on_relink`;
    #: declared by each plug-in class itself, never inherited (see :meth:`__init_subclass__`)
    dynamic_links: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A capability is the class's own declaration: a subclass adds state (covering's per-neighbour
        records) that its parent's :meth:`on_relink` does not re-point, so it follows dynamic links only
        when it says so itself."""
        super().__init_subclass__(**kwargs)
        if "dynamic_links" not in cls.__dict__:
            cls.dynamic_links = False

    def __init__(self, view: BrokerView) -> None:
        self.view = view
        self.table = RoutingTable(view.make_matcher())
        self._derive_neighbourhood()

    def _derive_neighbourhood(self) -> None:
        """Neighbour lists derived once per overlay (at start and at a relink), never per message."""
        nbrs = self.view.neighbours
        self.acols = sorted(n for n, c in nbrs.items() if c.kind == ACOL)
        self.icols = sorted(n for n, c in nbrs.items() if c.kind == ICOL)
        self.icol_to = {nbrs[n].cluster: n for n in self.icols}  # cluster -> the iCOL into it
        everyone = list(nbrs)
        self._others: dict[str | None, list[str]] = {None: everyone}
        self._others.update((n, [m for m in everyone if m != n]) for n in everyone)

    @abstractmethod
    def on_subscription(self, sub: Subscription, from_hop: str | None) -> Decision: ...

    @abstractmethod
    def on_unsubscription(self, unsub: Unsubscription, from_hop: str | None) -> Decision: ...

    @abstractmethod
    def on_publication(self, pub: Publication, from_hop: str | None) -> Decision: ...

    def on_relink(self, next_hop: Mapping[str, str]) -> int:
        """The neighbour set changed; re-point entries to ``next_hop[host broker]``; returns entries changed.

        Called between two messages, so the plug-in sees one overlay per message. A plug-in whose state
        depends on the neighbourhood in other ways than its entries' last hops leaves ``dynamic_links``
        False and is never relinked.
        """
        self._derive_neighbourhood()
        changed = 0
        for e in self.table.values():
            hop = next_hop.get(e.host_broker)
            if hop is not None and e.last_hop != LOCAL and hop != e.last_hop:
                e.last_hop = hop
                changed += 1
        return changed

    def param(self, key: str) -> Any:
        """A ``routing_params`` value, or its declared default."""
        return self.view.params.get(key, type(self).params[key])

    def table_size(self) -> int:
        return len(self.table)

    def match_steps(self, d: Decision) -> int | None:
        """Gryphon's matching steps for a publication decision, when the engine counts them.

        A plug-in that matched another table than ``self.table`` sets ``Decision.steps`` (:func:`steps_of`).
        """
        return d.steps if d.steps is not None else self.table.last_steps

    def entries(self) -> list[Entry]:
        return list(self.table.values())

    def local_deliveries(self, matched: Iterable[Entry]) -> list[str]:
        return [e.sub_id for e in matched if e.last_hop == LOCAL]

    def other_neighbours(self, from_hop: str | None) -> list[str]:
        """Every neighbour but ``from_hop`` (a shared list: do not change it)."""
        return self._others.get(from_hop, self._others[None])

    @staticmethod
    def copies(msg: Message, hops: Iterable[str]) -> list[Forward]:
        """One copy of ``msg`` to each of ``hops``."""
        return [Forward(n, msg) for n in hops]
