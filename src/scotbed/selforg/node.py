"""One broker's topology manager as pure logic: what it knows, what it decides, what it sends.

The broker runtime (``scotbed.selforg.manager``) feeds it the control messages its links
carry and the ids of notifications its clients publish or consume, and sends what it returns. It
runs the heuristic, the agreement and the interest estimate of this package, the code the
simulator (``scotbed.selforg.sim``) drives, with the simulator's rules: the η-hop broadcast carries
each hop's interest estimate, knowledge not refreshed for two periods is forgotten, a locked or
resting broker does not evaluate, and an abort travels back along the request path.

Messages (``kind``, JSON-able ``fields``, raw ``data``):

- ``bcast``: origin, ttl, path so far, hop interests, the origin's link descriptor; data = Bloom.
- ``req`` / ``abort``: a link request (:class:`~scotbed.selforg.agreement.Request`) going forward,
  or its abort going back, freeing locks.
- ``commit``: the far end j asks the *sequencer* (the least broker id) for the next tree version;
  the sequencer checks the swap against the newest tree, as the simulator's sequencer does, and
  starts the ``newver`` flood, or routes an ``abort`` back to j.
- ``newver``: version v = T_{v-1} + add − remove, with the two ends' descriptors; a broker adopts
  it after v − 1 (when the runtime's tree swap is ready) and passes it on over T_{v-1} ∪ T_v.

``commit`` and its abort travel hop by hop toward ``dest`` on the sender's adopted tree.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scotbed.selforg.agreement import ABORT, COMMIT, Lock, Request, contribution, step
from scotbed.selforg.costs import Costs, Edge, edge
from scotbed.selforg.heuristics import View, heuristic
from scotbed.selforg.interest import BLOOM_BITS, BLOOM_HASHES, CACHE_SIZE, BloomFilter, NotificationCache
from scotbed.selforg.records import AGREE, NO_KNOBS, SWAP, Decision, Knobs
from scotbed.selforg.tree import Tree, repointed

BCAST, REQ, ABORT_MSG, COMMIT_MSG, NEWVER = "bcast", "req", "abort", "commit", "newver"
KINDS = (BCAST, REQ, ABORT_MSG, COMMIT_MSG, NEWVER)


@dataclass(frozen=True)
class Settings:
    """``topology.self_organising`` as one broker runs it (times in seconds)."""

    heuristic: str
    eta: int = 4
    period: float = 1.0
    knobs: Knobs = NO_KNOBS
    cache_size: int = CACHE_SIZE
    bloom_bits: int = BLOOM_BITS
    bloom_hashes: int = BLOOM_HASHES


@dataclass(frozen=True)
class Out:
    """Send control message ``kind`` to neighbour ``to``."""

    to: str
    kind: str
    fields: dict[str, Any]
    data: bytes = b""


@dataclass(frozen=True)
class Adoption:
    """What the runtime's tree swap does to adopt a version: links to open (with the far end's
    descriptor), links to close, and the re-pointed next hops."""

    version: int
    up: dict[str, dict[str, Any]]
    down: list[str]
    next_hop: dict[str, str]


@dataclass
class _Known:
    heard: float
    interest: float
    path: tuple[str, ...]  # me … origin
    links: dict[Edge, float]
    peer: dict[str, Any]


@dataclass
class Node:
    """The topology manager's state at broker ``me``; methods return the messages to send."""

    me: str
    tree: Tree
    costs: Costs
    settings: Settings
    peer: dict[str, Any]  # my own link descriptor (address, type, cluster, region)
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        s = self.settings
        self.heuristic = heuristic(s.heuristic)
        self.cache = NotificationCache(s.cache_size, s.bloom_bits, s.bloom_hashes)
        self.trees: dict[int, Tree] = {0: self.tree}
        self.version = 0
        self.known: dict[str, _Known] = {}
        self.lock = Lock()
        self.resting = 0.0
        self.committed: dict[str, int] = {}  # swap id -> the version it made
        self.pending: dict[int, tuple[dict[str, Any], str | None]] = {}  # newver fields, came from
        self.granted: list[Tree] = [self.tree]  # the sequencer's versions
        self.records: list[Decision] = []

    # --- the tree as this broker has adopted it ---------------------------------------------------

    @property
    def sequencer(self) -> str:
        return min(self.tree.brokers)

    def neighbours(self) -> frozenset[str]:
        return self.trees[self.version].adjacency[self.me]

    def _toward(self, dest: str) -> str:
        return self.trees[self.version].next_hops(self.me)[dest]

    def _record(self, d: Decision, now: float) -> None:
        self.records.append(Decision(d.kind, self.me, d.heuristic, d.outcome, d.reason, d.inputs, now))

    def receive(self, now: float, kind: str, came: str, f: Mapping[str, Any], data: bytes = b"") -> list[Out]:
        """One control message from neighbour ``came``; returns what to send."""
        if kind == BCAST:
            return self.on_bcast(now, came, f, data)
        if kind == REQ:
            return self.on_req(now, f)
        if kind == ABORT_MSG:
            return self.on_abort(now, f)
        if kind == COMMIT_MSG:
            return self.on_commit(now, f)
        if kind == NEWVER:
            return self.on_newver(f, came)
        raise ValueError(f"unknown topology message {kind!r}; known: {', '.join(KINDS)}")

    # --- broadcasts and evaluation ----------------------------------------------------------------

    def broadcast(self) -> list[Out]:
        """The periodic η-hop broadcast of this broker's Bloom filter."""
        bloom = self.cache.bloom().value
        fields = {
            "origin": self.me,
            "ttl": self.settings.eta,
            "path": [self.me],
            "hops": [],
            "peer": self.peer,
        }
        return [Out(n, BCAST, fields, bloom) for n in sorted(self.neighbours())]

    def next_period(self) -> float:
        """±10 % jitter: two brokers whose requests lock each other out do not meet again in step."""
        return self.settings.period * self.rng.uniform(0.9, 1.1)

    def on_bcast(self, now: float, came: str, f: Mapping[str, Any], data: bytes) -> list[Out]:
        path = tuple(f["path"])
        if self.me in path:
            return []
        s = self.settings
        i_bu = self.known[came].interest if came in self.known else None
        hops = [*f["hops"], [came, self.me, i_bu]]
        bloom = BloomFilter(s.bloom_bits, s.bloom_hashes, data)
        self.known[f["origin"]] = _Known(
            now,
            float(self.cache.common(bloom)),
            (self.me, *reversed(path)),
            {edge(u, v): x for u, v, x in hops if x is not None},
            dict(f["peer"]),
        )
        out = []
        if f["ttl"] > 1:
            fwd = dict(f) | {"ttl": f["ttl"] - 1, "path": [*path, self.me], "hops": hops}
            out = [Out(n, BCAST, fwd, data) for n in sorted(self.neighbours() - {came})]
        return out + self._evaluate(now, f["origin"])

    def view(self, now: float, origin: str) -> View:
        fresh = now - 2 * self.settings.period  # second chance: two periods without news
        for x in [x for x, k in self.known.items() if k.heard < fresh]:
            del self.known[x]
        k = self.known.get(origin)
        links = dict(k.links) if k is not None else {}
        return View(float(len(self.cache)), {x: k.interest for x, k in self.known.items()}, links)

    def _evaluate(self, now: float, origin: str) -> list[Out]:
        if self.lock.holder is not None or now < self.resting:
            return []
        known = self.known[origin]
        d = self.heuristic.evaluate(known.path, self.view(now, origin), self.costs, self.settings.knobs)
        self._record(d, now)
        if d.outcome != "request":
            return []
        request = Request(f"{self.me}>{origin}@{now:.6f}", known.path)
        return self._step(now, request, {self.me: self.peer, origin: known.peer})

    # --- the agreement along the request path -----------------------------------------------------

    def on_req(self, now: float, f: Mapping[str, Any]) -> list[Out]:
        return self._step(now, _request(f), f["peers"])

    def _step(self, now: float, request: Request, peers: Mapping[str, Any]) -> list[Out]:
        part = contribution(self.heuristic, request, self.view(now, request.path[-1]), self.costs)
        s = step(request, self.lock, self.neighbours(), part)
        inputs = {"swap": request.swap, "part": _edges(part) if isinstance(part, Mapping) else part}
        self._record(Decision(AGREE, self.me, self.heuristic.name, s.action, s.reason, inputs), now)
        if s.action == ABORT:
            return self._unwind(request)
        if s.action == COMMIT:
            assert s.remove is not None
            fields = _fields(request) | {
                "remove": list(s.remove),
                "peers": dict(peers),
                "dest": self.sequencer,
            }
            return self._route(now, COMMIT_MSG, fields)
        assert s.to is not None
        return [Out(s.to, REQ, _fields(request) | {"peers": dict(peers)})]

    def on_abort(self, now: float, f: Mapping[str, Any]) -> list[Out]:
        if f.get("dest", self.me) != self.me:
            return self._route(now, ABORT_MSG, f)
        request = _request(f)
        if f.get("reason"):
            self._record(
                Decision(AGREE, self.me, self.heuristic.name, ABORT, f["reason"], {"swap": request.swap}), now
            )
        return self._unwind(request)

    def _unwind(self, request: Request) -> list[Out]:
        """Free my lock and pass the abort back to the previous broker on the path."""
        self.lock.release(request.swap)
        if request.at == 0:
            return []
        request.at -= 1
        return [Out(request.path[request.at], ABORT_MSG, _fields(request))]

    def _route(self, now: float, kind: str, f: Mapping[str, Any]) -> list[Out]:
        """Toward ``dest`` on my adopted tree; handled here if I am ``dest``."""
        if f["dest"] != self.me:
            return [Out(self._toward(f["dest"]), kind, dict(f))]
        return self.on_commit(now, f) if kind == COMMIT_MSG else self.on_abort(now, f)

    # --- the sequencer and the NEWVER flood ---------------------------------------------------------

    def on_commit(self, now: float, f: Mapping[str, Any]) -> list[Out]:
        if f["dest"] != self.me:
            return self._route(now, COMMIT_MSG, f)
        request = _request(f)
        add, remove = request.requested, edge(*f["remove"])
        try:
            new = self.granted[-1].swapped(add, remove)
        except ValueError:
            back = _fields(request) | {
                "dest": request.path[-1],
                "reason": "the swap no longer fits the newest tree",
            }
            return self._route(now, ABORT_MSG, back)
        self.granted.append(new)
        v = len(self.granted) - 1
        inputs = {"add": list(add), "remove": list(remove), "version": v, "vector": _edges(request.vector)}
        self._record(Decision(SWAP, self.me, self.heuristic.name, COMMIT, "", inputs), now)
        fields = {
            "version": v,
            "add": list(add),
            "remove": list(remove),
            "swap": request.swap,
            "peers": f["peers"],
        }
        return self.on_newver(fields, None)

    def on_newver(self, f: Mapping[str, Any], came: str | None) -> list[Out]:
        """Hold version v until the runtime adopts it (:meth:`adoption`, then :meth:`adopted`)."""
        if f["version"] > self.version and f["version"] not in self.pending:
            self.pending[f["version"]] = (dict(f), came)
        return []

    def adoption(self) -> Adoption | None:
        """The next version's link changes, if its NEWVER is here (the runtime checks it may adopt)."""
        v = self.version + 1
        if v not in self.pending:
            return None
        f, _ = self.pending[v]
        old = self.trees[self.version]
        new = old.swapped(edge(*f["add"]), edge(*f["remove"]))
        up = {x: f["peers"][x] for x in f["add"] if x != self.me and self.me in f["add"]}
        down = [x for x in f["remove"] if x != self.me and self.me in f["remove"]]
        return Adoption(v, up, down, repointed(old, new).get(self.me, {}))

    def adopted(self) -> list[Out]:
        """Version ``self.version + 1`` is adopted: record it and pass its NEWVER on."""
        v = self.version + 1
        f, came = self.pending.pop(v)
        old = self.trees[self.version]
        self.trees[v] = old.swapped(edge(*f["add"]), edge(*f["remove"]))
        self.trees.pop(v - 2, None)
        self.version = v
        self.committed[f["swap"]] = v
        nbrs = (old.adjacency[self.me] | self.trees[v].adjacency[self.me]) - {came}
        return [Out(n, NEWVER, f) for n in sorted(nbrs)]

    def release(self, now: float, finished: int) -> bool:
        """Free the lock of a committed swap once its version is adopted and the one before finished
        here (not before: this broker would check paths on a stale tree); then the cooldown."""
        v = self.committed.get(self.lock.holder or "")
        if v is None or self.version < v or finished < v - 1:
            return False
        self.lock.release(self.lock.holder or "")
        self.resting = now + self.settings.knobs.cooldown
        return True


def _fields(request: Request) -> dict[str, Any]:
    return {
        "swap": request.swap,
        "path": list(request.path),
        "at": request.at,
        "vector": _edges(request.vector),
    }


def _request(f: Mapping[str, Any]) -> Request:
    return Request(f["swap"], tuple(f["path"]), f["at"], {edge(u, v): x for u, v, x in f["vector"]})


def _edges(vector: Mapping[Edge, float]) -> list[list[Any]]:
    return [[u, v, x] for (u, v), x in sorted(vector.items())]
