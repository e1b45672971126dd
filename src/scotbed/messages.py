"""Routing messages as plain data: what travels between brokers, before wire encoding."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from enum import IntEnum
from operator import attrgetter
from typing import Any, TypeVar

from scotbed.filters import Filter


class SubState(IntEnum):
    """Mirrors ``scotbed.v1.SubscriptionState``."""

    UNSPECIFIED = 0
    PRIMARY = 1
    SECONDARY = 2


@dataclass(slots=True)
class Subscription:
    sub_id: str
    filter: Filter
    host_broker: str
    cbv: int = 0
    state: SubState = SubState.UNSPECIFIED
    origin_ns: int = 0
    hops: int = 0
    packed: tuple[Subscription, ...] = ()
    tree_version: int = 0  # self-organising trees: the overlay version this subscription floods on


@dataclass(slots=True)
class Unsubscription:
    sub_id: str
    host_broker: str
    cbv: int = 0
    state: SubState = SubState.UNSPECIFIED
    origin_ns: int = 0
    hops: int = 0
    filter: Filter | None = None
    packed: tuple[Subscription, ...] = ()
    prune: tuple[tuple[str, int], ...] = ()  # selective pruning: (PHB, hops still to prune); () = full prune
    tree_version: int = 0  # self-organising trees: the overlay version this unsubscription floods on


@dataclass(slots=True)
class Publication:
    pub_id: str
    publisher: str
    attrs: dict[str, Any]
    intended_ns: int = 0
    sent_ns: int = 0
    source_broker: str = ""
    bids: tuple[str, ...] = ()
    cbv: int | None = None  # DNR header; None = no header
    hops: int = 0
    dynamic: bool = False
    distance: int = 0  # selective-pruning header: hops since the last broker where k >= 2 entries matched
    count: int = 0  # selective-pruning header: brokers on the way where k >= 2 entries matched
    tree_version: int = 0  # self-organising trees: the overlay version this notification is routed on


Message = Subscription | Unsubscription | Publication


M = TypeVar("M", bound=Subscription | Unsubscription | Publication)

#: per message class, its fields' values in declaration order (its constructor's arguments)
_VALUES: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def copy_with(msg: M, **changes: Any) -> M:
    """A copy of ``msg`` with some fields changed (for per-hop headers): what ``dataclasses.replace``
    gives, without its per-call field checks, since it runs on every hop of every notification."""
    cls = type(msg)
    values = _VALUES.get(cls)
    if values is None:
        values = _VALUES[cls] = attrgetter(*(f.name for f in fields(cls)))
    new = cls(*values(msg))
    for name, value in changes.items():
        setattr(new, name, value)
    return new
