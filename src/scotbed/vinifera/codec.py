"""Messages, descriptors, subscriptions and the config as JSON-able values: what a peer process puts
on the wire (the proto carries the kind and this body) and what the event log and the launcher write.

One home for the encoding: the simulator never needs it, a process encodes exactly the dataclasses
the state machine returns, so the two drive the same logic.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from scotbed.vinifera.config import PeerConfig
from scotbed.vinifera.interest import Event, Subscription
from scotbed.vinifera.messages import Desc, EventMsg, Gossip, Load, Lookup, Moved, Msg, Shuffle

KINDS: dict[str, type] = {c.__name__: c for c in (Shuffle, Gossip, Load, Moved, Lookup, EventMsg)}


def sub_out(sub: Subscription | None) -> list[list[Any]] | None:
    return None if sub is None else [list(r) for r in sub.ranges]


def sub_in(v: list[list[Any]] | None) -> Subscription | None:
    return None if v is None else Subscription(tuple((str(a), float(lo), float(hi)) for a, lo, hi in v))


def event_out(ev: Event) -> list[list[Any]]:
    return [[a, v] for a, v in ev]


def event_in(v: list[list[Any]]) -> Event:
    return tuple((str(a), float(x)) for a, x in v)


def desc_out(d: Desc) -> dict[str, Any]:
    return {"name": d.name, "id": d.id, "ver": d.ver, "sub": sub_out(d.sub)}


def desc_in(v: dict[str, Any]) -> Desc:
    return Desc(int(v["name"]), int(v["id"]), int(v["ver"]), sub_in(v["sub"]))


def encode(msg: Msg) -> tuple[str, dict[str, Any]]:
    """The kind (the dataclass name) and the fields of one message."""
    body: dict[str, Any] = {}
    for f in fields(msg):
        v = getattr(msg, f.name)
        if f.name == "descs":
            v = [desc_out(d) for d in v]
        elif f.name == "desc":
            v = desc_out(v)
        elif f.name == "sub":
            v = sub_out(v)
        elif f.name == "event":
            v = event_out(v)
        elif f.name == "iv":
            v = list(v)
        body[f.name] = v
    return type(msg).__name__, body


def decode(kind: str, body: dict[str, Any]) -> Msg:
    """The message ``encode`` gave ``kind`` and ``body`` for (ValueError on an unknown kind)."""
    cls = KINDS.get(kind)
    if cls is None:
        raise ValueError(f"unknown peer message kind {kind!r}")
    args = dict(body)
    if "descs" in args:
        args["descs"] = tuple(desc_in(d) for d in args["descs"])
    if "desc" in args:
        args["desc"] = desc_in(args["desc"])
    if "sub" in args:
        args["sub"] = sub_in(args["sub"])
    if "event" in args:
        args["event"] = event_in(args["event"])
    if "iv" in args:
        args["iv"] = (int(args["iv"][0]), int(args["iv"][1]))
    msg: Msg = cls(**args)
    return msg


def config_out(cfg: PeerConfig) -> dict[str, Any]:
    return asdict(cfg)


def config_in(v: dict[str, Any]) -> PeerConfig:
    args = dict(v)
    if "domains" in args:
        args["domains"] = tuple((str(a), float(lo), float(hi)) for a, lo, hi in args["domains"])
    return PeerConfig(**args)
