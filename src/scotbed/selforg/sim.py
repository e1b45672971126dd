"""The self-organising tree at paper scale on a virtual clock.

Brokers exchange real messages over FIFO links with latencies: notifications routed per tree
version (``swapwave``), η-hop broadcasts of Bloom filters, link requests through the agreement,
NEWVER floods and END waves. The heuristic, the agreement and the swap protocol are the same code
the broker runtime is to use. Two simplifications, both of the simulator only: a notification
carries the brokers of its delivery tree on its version's tree (what converged ``rpf`` routing
tables give), and versions are numbered by one sequencer (a commit takes the next number, and
aborts if its swap no longer fits the newest tree). Costs per message hop are c_uv + p_v
(Eq. 1): notifications are the delivery cost, every other message is the heuristic's overhead.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from scotbed.contract import LINK_DOWN, LINK_UP
from scotbed.selforg.agreement import ABORT, COMMIT, Lock, Request, contribution, step
from scotbed.selforg.costs import Costs, Edge, delivery_tree, edge
from scotbed.selforg.heuristics import View, heuristic
from scotbed.selforg.interest import BLOOM_BITS, BLOOM_HASHES, CACHE_SIZE, BloomFilter, NotificationCache
from scotbed.selforg.records import AGREE, NO_KNOBS, SWAP, Decision, Knobs
from scotbed.selforg.redraws import Redraw, tables
from scotbed.selforg.simclock import Clock, Links
from scotbed.selforg.simload import Workload, draw_brokers, draw_links, weighted_pick
from scotbed.selforg.swapwave import Parking, Send, Versions
from scotbed.selforg.tree import Tree

NOTIFY = "notification"
OVERHEAD = ("broadcast", "request", "newver", "end")


@dataclass(frozen=True)
class Setup:
    load: Workload = field(default_factory=Workload)
    heuristic: str | None = None  # None: the static tree
    eta: int = 4
    period: float = 250.0
    duration: float = 25_000.0
    bucket: float = 1000.0
    redraws: tuple[tuple[float, str], ...] = ()  # (time, "links" | "brokers")
    cache_size: int = CACHE_SIZE
    bloom_bits: int = BLOOM_BITS
    bloom_hashes: int = BLOOM_HASHES
    latency_scale: float = 1.0
    latency_floor: float = 1.0
    knobs: Knobs = NO_KNOBS
    seed: int = 1
    window: float | None = None  # interest over the ids cached in the last window ticks (None: all)
    open_versions: int | None = None  # a commit aborts while this many versions' END waves run
    fixed: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (publisher, subscribers) per type, no churn


@dataclass(frozen=True)
class Note:
    nid: str
    publisher: str
    seq: int
    version: int
    subscribers: frozenset[str]
    nodes: frozenset[str]
    published: float


@dataclass
class Outcome:
    """What a run measured: cost per bucket and kind, every swap, the oracle's inputs."""

    cost: dict[str, dict[int, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))
    trees: list[Tree] = field(default_factory=list)
    records: list[Decision] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    parked: int = 0  # notifications that waited for their version's END wave
    overlap: int = 0  # the most versions whose END waves ran at once (this commit's included)
    delays: list[float] = field(default_factory=list)  # publication to delivery, per delivery
    published: Counter[int] = field(default_factory=Counter)  # per bucket
    expected: Counter[tuple[str, str]] = field(default_factory=Counter)
    delivered: Counter[tuple[str, str]] = field(default_factory=Counter)
    order: dict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(list))
    locks: list[tuple[float, str, str, str]] = field(default_factory=list)  # (t, broker, swap, take|free)
    links: list[tuple[float, str, Edge, int]] = field(default_factory=list)  # (t, up|down, link, version)

    @property
    def swaps(self) -> list[Decision]:
        return [r for r in self.records if r.kind == SWAP]

    def total(self, kind: str) -> float:
        return sum(self.cost[kind].values())


class Simulation:
    def __init__(self, setup: Setup, tree: Tree | None = None, costs: Costs | None = None) -> None:
        self.setup, self.rng = setup, random.Random(setup.seed)
        # separate streams, so every heuristic sees the same tree, costs, workload and redraws
        self.load_rng, self.phase_rng = random.Random(setup.seed + 1), random.Random(setup.seed + 2)
        names = setup.load.names() if tree is None else sorted(tree.brokers)
        self.names = names
        self.costs = costs or Costs(
            links=draw_links(names, setup.load.maxima()[0], self.rng),
            brokers=draw_brokers(names, setup.load.maxima()[1], self.rng),
        )
        self.tree = tree or Tree.random(names, self.rng)
        self.clock = Clock()
        self.links = Links(self.clock, lambda: self.costs, setup.latency_scale, setup.latency_floor)
        self.out = Outcome(trees=[self.tree])
        self.trees = [self.tree]
        self.versions = {b: Versions.start(b, self.tree.adjacency[b]) for b in names}
        self.parked = {b: Parking() for b in names}
        self.caches = {
            b: NotificationCache(setup.cache_size, setup.bloom_bits, setup.bloom_hashes) for b in names
        }
        self.known: dict[str, dict[str, tuple[float, float, tuple[str, ...], dict[Edge, float]]]] = {
            b: {} for b in names
        }
        self.locks = {b: Lock() for b in names}
        self.resting: dict[str, float] = defaultdict(float)
        self.pending: dict[str, dict[int, tuple[Edge, Edge, str | None]]] = defaultdict(dict)
        self.committed: dict[str, int] = {}  # swap id -> the version it made
        self.down: set[tuple[int, Edge]] = set()  # (version, e_r) whose END wave has closed e_r
        self.heuristic = heuristic(setup.heuristic) if setup.heuristic else None
        self.weights = [self.rng.random() for _ in names]
        self.seq: Counter[str] = Counter()
        self.subs: dict[str, set[str]] = {}
        self.steiner: dict[tuple[int, frozenset[str]], frozenset[str]] = {}  # delivery trees by version
        self.publisher: dict[str, str] = {}

    # -- costs and accounting -------------------------------------------------------------
    def _charge(self, kind: str, u: str | None, v: str, when: float) -> None:
        c = self.costs.broker(v) + (self.costs.link(u, v) if u is not None else 0.0)
        self.out.cost[kind][int(when // self.setup.bucket)] += c

    def _send(self, kind: str, u: str, v: str, fn: object, *args: object) -> None:
        """Charge the hop on arrival; a notification's to its publication's bucket (parking would
        otherwise move its cost into later buckets)."""
        note = args[1] if kind == NOTIFY else None

        def arrive() -> None:
            self._charge(kind, u, v, note.published if isinstance(note, Note) else self.clock.now)
            fn(*args)  # type: ignore[operator]

        self.links.send(u, v, arrive)

    # -- workload ---------------------------------------------------------------------------
    def _start_workload(self) -> None:
        load = self.setup.load
        for t, (pub, subs) in enumerate(self.setup.fixed):
            self.publisher[f"t{t}"], self.subs[f"t{t}"] = pub, set(subs)
            self.clock.at(self.load_rng.expovariate(load.publish_rate), self._publish, f"t{t}")
        if self.setup.fixed:
            return
        for t in range(load.types):
            name = f"t{t}"
            pub = weighted_pick(self.names, self.weights, set(), self.load_rng)
            self.publisher[name] = pub
            self.subs[name] = set()
            for _ in range(min(load.subscribers, len(self.names) - 1)):
                self._subscribe(name)
            self.clock.at(self.load_rng.expovariate(load.publish_rate), self._publish, name)

    def _subscribe(self, t: str) -> None:
        b = weighted_pick(self.names, self.weights, self.subs[t] | {self.publisher[t]}, self.load_rng)
        self.subs[t].add(b)
        if self.setup.load.unsubscribe_rate > 0:
            self.clock.at(
                self.clock.now + self.load_rng.expovariate(self.setup.load.unsubscribe_rate),
                self._churn,
                t,
                b,
            )

    def _churn(self, t: str, b: str) -> None:
        if self.clock.now < self.setup.duration:
            self.subs[t].discard(b)
            self._subscribe(t)

    def _publish(self, t: str) -> None:
        if self.clock.now >= self.setup.duration:
            return
        pub = self.publisher[t]
        self.seq[t] += 1
        v = self.versions[pub].version
        subs = frozenset(self.subs[t])
        key = (v, subs | {pub})
        if key not in self.steiner:
            self.steiner[key] = frozenset(delivery_tree(self.trees[v].adjacency, key[1])[0])
        nodes = self.steiner[key]
        note = Note(f"{t}:{self.seq[t]}", pub, self.seq[t], v, subs, nodes, self.clock.now)
        for s in subs:
            self.out.expected[(note.nid, s)] += 1
        self._charge(NOTIFY, None, pub, self.clock.now)
        self.out.published[int(self.clock.now // self.setup.bucket)] += 1
        self.caches[pub].add(note.nid, self.clock.now)
        self._on_note(pub, note, None)
        self.clock.at(
            self.clock.now + self.load_rng.expovariate(self.setup.load.publish_rate), self._publish, t
        )

    # -- notifications across versions -------------------------------------------------------
    def _on_note(self, b: str, note: Note, came: str | None) -> None:
        if self.parked[b].admit(self.versions[b], note.version, (note, came)):
            self._process(b, note, came)
        else:
            self.out.parked += 1

    def _process(self, b: str, note: Note, came: str | None) -> None:
        if b in note.subscribers:
            self.out.delivered[(note.nid, b)] += 1
            self.out.delays.append(self.clock.now - note.published)
            self.out.order[(note.publisher + "/" + note.nid.split(":")[0], b)].append(note.seq)
            self.caches[b].add(note.nid, self.clock.now)
        for n in sorted(self.versions[b].neighbours[note.version]):
            if n != came and n in note.nodes:
                self._send(NOTIFY, b, n, self._on_note, n, note, b)

    def _released(self, b: str) -> None:
        """After b's END progress: release parked notifications, and the lock of a committed swap
        once b has adopted its version (not before: b would check paths on a stale tree)."""
        for note, came in self.parked[b].release(self.versions[b]):
            self._process(b, note, came)
        holder, ver = self.locks[b].holder, self.versions[b]
        v = self.committed.get(holder) if holder is not None else None
        if holder is not None and v is not None and ver.version >= v and ver.finished >= v - 1:
            self._free(b, holder)
            self.resting[b] = self.clock.now + self.setup.knobs.cooldown

    # -- the swap: NEWVER flood and END waves -----------------------------------------------
    def _commit(self, j: str, request: Request, remove: Edge) -> bool:
        """Number the swap as the next version; False if it no longer fits the newest tree."""
        v = len(self.trees)
        # END waves run for versions oldest+1 … v−2 (the newest, v−1, has no successor yet)
        running = v - 2 - min(ver.finished for ver in self.versions.values())
        if self.setup.open_versions is not None and running >= self.setup.open_versions:
            return False
        try:
            new = self.trees[-1].swapped(request.requested, remove)
        except ValueError:
            return False
        self.trees.append(new)
        self.out.trees.append(new)
        self.committed[request.swap] = v
        self.out.overlap = max(self.out.overlap, running + 1)
        inputs = {"add": request.requested, "remove": remove, "version": v, "vector": dict(request.vector)}
        self.out.records.append(Decision(SWAP, j, self._hname, COMMIT, "", inputs, self.clock.now))
        self.out.links.append((self.clock.now, LINK_UP, request.requested, v))
        self._on_newver(j, v, request.requested, remove, None)
        return True

    def _on_newver(self, b: str, v: int, add: Edge, remove: Edge, came: str | None) -> None:
        """Adopt version v (after v − 1: a later one waits) and pass the flood on."""
        ver = self.versions[b]
        if ver.version >= v:
            return
        if v > ver.version + 1:
            self.pending[b][v] = (add, remove, came)
            return
        old = ver.neighbours[ver.version]
        sends = ver.adopt(v, add, remove)
        for n in sorted((old | ver.neighbours[v]) - {came} if came else old | ver.neighbours[v]):
            self._send("newver", b, n, self._on_newver, n, v, add, remove, b)
        self._ends(b, sends)
        if v + 1 in self.pending[b]:
            self._on_newver(b, v + 1, *self.pending[b].pop(v + 1))

    def _on_end(self, b: str, v: int, sender: str) -> None:
        self._ends(b, self.versions[b].on_end(v, sender))

    def _ends(self, b: str, sends: list[Send]) -> None:
        self._released(b)  # parked notifications now due go out before the END markers
        for s in sends:
            self._send("end", b, s.to, self._on_end, s.to, s.version, b)
        ver = self.versions[b]
        for v in ver.removed:
            lost = ver.closed(v)
            if lost is not None and (v + 1, edge(b, lost)) not in self.down:
                self.down.add((v + 1, edge(b, lost)))
                self.out.links.append((self.clock.now, LINK_DOWN, edge(b, lost), v + 1))

    # -- broadcasts and evaluation ------------------------------------------------------------
    @property
    def _hname(self) -> str:
        return self.heuristic.name if self.heuristic else ""

    def _now_neighbours(self, b: str) -> frozenset[str]:
        ver = self.versions[b]
        return ver.neighbours[ver.version]

    def _broadcast(self, b: str) -> None:
        if self.clock.now >= self.setup.duration:
            return
        bloom = self.caches[b].bloom(self._since())
        for n in sorted(self._now_neighbours(b)):
            self._send("broadcast", b, n, self._on_broadcast, n, b, bloom, self.setup.eta, (b,), (), b)
        # ±10 % jitter: two brokers whose requests lock each other out do not meet again in step
        self.clock.at(
            self.clock.now + self.setup.period * self.phase_rng.uniform(0.9, 1.1), self._broadcast, b
        )

    def _on_broadcast(
        self,
        b: str,
        origin: str,
        bloom: BloomFilter,
        ttl: int,
        path: tuple[str, ...],
        hops: tuple[tuple[Edge, float | None], ...],
        came: str,
    ) -> None:
        if b in path:
            return
        mine = self.known[b]
        i_bu = mine[came][1] if came in mine else None
        hops = (*hops, (edge(came, b), i_bu))
        path = (*path, b)
        interest = float(self.caches[b].common(bloom, self._since()))
        mine[origin] = (
            self.clock.now,
            interest,
            tuple(reversed(path)),
            {e: x for e, x in hops if x is not None},
        )
        if ttl > 1:
            for n in sorted(self._now_neighbours(b) - {came}):
                self._send("broadcast", b, n, self._on_broadcast, n, origin, bloom, ttl - 1, path, hops, b)
        self._evaluate(b, origin)

    def _view(self, b: str, origin: str) -> View:
        fresh = self.clock.now - 2 * self.setup.period  # second chance: two periods without news
        mine = self.known[b]
        for x in [x for x, k in mine.items() if k[0] < fresh]:
            del mine[x]
        links = dict(mine[origin][3]) if origin in mine else {}
        own = float(self.caches[b].recent(self._since()))
        return View(own, {x: k[1] for x, k in mine.items()}, links)

    def _since(self) -> float | None:
        return None if self.setup.window is None else self.clock.now - self.setup.window

    def _evaluate(self, b: str, origin: str) -> None:
        if self.heuristic is None or self.locks[b].holder is not None or self.clock.now < self.resting[b]:
            self.out.skipped["busy"] += 1
            return
        path = self.known[b][origin][2]
        d = self.heuristic.evaluate(path, self._view(b, origin), self.costs, self.setup.knobs)
        if d.outcome != "request":
            self.out.skipped[d.reason.split(" yet")[0]] += 1
            return
        self.out.records.append(
            Decision(d.kind, b, d.heuristic, d.outcome, d.reason, d.inputs, self.clock.now)
        )
        self._step(Request(f"{b}>{origin}@{self.clock.now:.3f}", tuple(path)))

    # -- the agreement over the links --------------------------------------------------------
    def _step(self, request: Request) -> None:
        assert self.heuristic is not None
        me = request.path[request.at]
        part = contribution(self.heuristic, request, self._view(me, request.path[-1]), self.costs)
        was = self.locks[me].holder
        s = step(request, self.locks[me], self._now_neighbours(me), part)
        if was is None and self.locks[me].holder == request.swap:
            self.out.locks.append((self.clock.now, me, request.swap, "take"))
        if s.action == COMMIT and s.remove is not None and not self._commit(me, request, s.remove):
            s = type(s)(ABORT, "the swap no longer fits the newest tree, or too many versions are open")
        self.out.records.append(
            Decision(AGREE, me, self._hname, s.action, s.reason, {"swap": request.swap}, self.clock.now)
        )
        if s.action == ABORT:
            self._unwind(request, request.at)
        elif s.action != COMMIT:
            assert s.to is not None
            self._send("request", me, s.to, self._step, request)

    def _unwind(self, request: Request, at: int) -> None:
        """Abort travels back along the request path, freeing each lock it holds."""
        me = request.path[at]
        self._free(me, request.swap)
        if at > 0:
            self._send("request", me, request.path[at - 1], self._unwind, request, at - 1)

    def _free(self, b: str, swap: str) -> None:
        if self.locks[b].holder == swap:
            self.locks[b].release(swap)
            self.out.locks.append((self.clock.now, b, swap, "free"))

    # -- cost redraws and the run ---------------------------------------------------------------
    def _timeline(self) -> list[Costs]:
        """The redrawn tables, by the code that computes a real run's (``selforg.redraws``); each
        redraw's seed from the run's, so every heuristic sees the same redraws."""
        c_max, p_max = self.setup.load.maxima()
        redraws = []
        for k, (when, what) in enumerate(self.setup.redraws, start=1):
            if what not in ("links", "brokers"):
                raise ValueError(f"redraw what? {what!r} (links or brokers)")
            top = c_max if what == "links" else p_max
            redraws.append(Redraw(when / 1000.0, what, top, (self.setup.seed + 3) * 1000 + k))
        return tables(self.costs, redraws, self.names)[1:]

    def _redraw(self, costs: Costs) -> None:
        self.costs = costs

    def run(self) -> Outcome:
        self._start_workload()
        for (when, _), costs in zip(self.setup.redraws, self._timeline(), strict=True):
            self.clock.at(when, self._redraw, costs)
        if self.heuristic is not None:
            for b in self.names:
                self.clock.at(self.phase_rng.uniform(0, self.setup.period), self._broadcast, b)
        self.clock.run()
        return self.out
