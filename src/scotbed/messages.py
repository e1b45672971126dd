"""Routing messages as plain data: what travels between brokers, before wire encoding."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Any

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


def copy_with(msg: Message, **changes: Any) -> Message:
    """A copy of ``msg`` with some fields changed (for per-hop headers)."""
    return replace(msg, **changes)
