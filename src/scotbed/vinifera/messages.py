"""The messages peers exchange; a driver (simulator or gRPC process) carries them unchanged.

Peers are addressed by a stable name (an int); a peer's ring id may move (load balancing), so a
descriptor carries the id with a version and the higher version wins.
"""

from __future__ import annotations

from dataclasses import dataclass

from scotbed.vinifera.interest import Event, Subscription
from scotbed.vinifera.ring import Interval


@dataclass(frozen=True)
class Desc:
    """A peer's profile: name, ring id, id version and subscription."""

    name: int
    id: int
    ver: int
    sub: Subscription | None


@dataclass(frozen=True)
class Shuffle:
    """Cyclon peer sampling: a shuffle request or its reply."""

    src: int
    dst: int
    descs: tuple[Desc, ...]
    reply: bool = False


@dataclass(frozen=True)
class Gossip:
    """T-Man: the sender's profile and candidates (links, sample); also the ring heartbeat."""

    src: int
    dst: int
    descs: tuple[Desc, ...]
    reply: bool = False


@dataclass(frozen=True)
class Load:
    """Load piggybacked to the predecessor, with the median point of the events behind it."""

    src: int
    dst: int
    load: int
    median: int | None


@dataclass(frozen=True)
class Moved:
    """A peer moved its id; ``load`` is set for the successor whose load it halved."""

    src: int
    dst: int
    desc: Desc
    load: int | None = None


@dataclass(frozen=True)
class Lookup:
    """A range lookup installing ``owner``'s subscription over ``attr`` for the points ``iv``."""

    src: int
    dst: int
    owner: int
    attr: str
    iv: Interval
    sub: Subscription
    hops: int = 0
    #: the receiver's id as the sender knew it (-1: not routed by id); a stale one gets corrected
    known_id: int = -1


@dataclass(frozen=True)
class EventMsg:
    """One copy of an event: ``route`` towards the RV of ``point``, then ``tree`` down the CRTs."""

    src: int
    dst: int
    eid: int
    attr: str
    point: int
    event: Event
    phase: str
    hops: int
    #: hops already taken when the copy reached its RV (the route part of ``hops``)
    at_rv: int = 0
    known_id: int = -1


Msg = Shuffle | Gossip | Load | Moved | Lookup | EventMsg
ROUTE = "route"
TREE = "tree"
