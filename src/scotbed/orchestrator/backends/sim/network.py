"""The time model of docs/design.md §11 over the real routing plug-ins, in virtual time.

A :class:`SimBroker` is one FIFO server: a message taken from its input is served for
``service_us`` per unit (:func:`scotbed.broker.service.units`), and at the end of its service the
routing plug-in decides, local deliveries happen and the copies enter one :class:`SimLink` per
neighbour. A link sends within its token bucket (``capacity_msgs_per_s``, a burst of 10 ms of
capacity, as a broker's link sender) and a message arrives ``latency_ms ± jitter_ms`` after it
leaves, never before the one sent ahead of it. The brokers log what a broker process logs, from
the same handlers' order, stamped with the virtual clock; what a broker process adds of its own
(gRPC, batching, its event loop) is not modelled.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from typing import Any

from scotbed import contract
from scotbed.broker.linkout import CeWindow
from scotbed.broker.service import Server
from scotbed.broker.view import ConfigView
from scotbed.config import BrokerConfig, NeighbourConfig
from scotbed.experiment.spec_faults import FaultSpec
from scotbed.messages import Message, Publication, Subscription, copy_with
from scotbed.orchestrator.backends.sim.calibration import NONE as NO_COST
from scotbed.orchestrator.backends.sim.calibration import HostCost
from scotbed.orchestrator.backends.sim.clock import Clock
from scotbed.routing import make_algorithm
from scotbed.routing.base import Decision, LinkState

#: ``emit(ts_ns, ev, **fields)``: one event line of a broker's log
Emit = Callable[..., None]
#: the ``Emit`` of a broker's log, by the broker's id
Emitters = Callable[[str], Emit]
#: ``receive(sub_id, publication, broker_ns)``: a local delivery reaches its subscriber
Receive = Callable[[str, Publication, int], None]


class SimLink:
    """The output side of one directed link: queue, token bucket, delay line, CE window."""

    def __init__(
        self,
        clock: Clock,
        neighbour: NeighbourConfig,
        capacity: float,
        window_s: float,
        rng: random.Random,
        hop_ns: int = 0,
    ) -> None:
        self.clock = clock
        self.hop_ns = hop_ns  # a broker process's own cost per inter-broker hop (calibration.HostCost)
        self.neighbour = neighbour
        self.id = neighbour.id
        self.queue: deque[Message] = deque()
        self.capacity = max(0.0, capacity)
        self.burst = max(1.0, self.capacity / 100.0)
        self.tokens = 0.0  # empty at the start, as a broker's link sender
        self.refilled_ns = clock.now_ns
        self.window = CeWindow(window_s, clock.seconds)
        self.rng = rng
        self.last_arrival_ns = 0
        self.latency_ms, self.jitter_ms = neighbour.latency_ms, neighbour.jitter_ms
        self.cut = False  # a cut link holds its queue until restored (faults: cut, restore)
        self.pumping = False  # a send is scheduled for when the bucket holds a token
        self._generation = 0  # a capacity change makes the send scheduled before it stale
        self.arrive: Callable[[str, Message], None] = lambda src, msg: None  # set by the network

    def put(self, src: str, msg: Message) -> None:
        self.queue.append(msg)
        self.window.count_in(1)
        if not self.pumping:
            self._pump(src)

    def set_capacity(self, src: str, capacity: float) -> None:
        """Envelopes/s from now on (0 = unlimited), as a broker's ``SetLinkCapacity``."""
        self._refill()
        self.capacity = max(0.0, capacity)
        self.burst = max(1.0, self.capacity / 100.0)
        self.tokens = min(self.tokens, self.burst)
        self._generation += 1
        self._pump(src)

    def set_cut(self, src: str, cut: bool) -> None:
        """Hold the queue (cut) or send it again (restore); nothing is lost either way."""
        self.cut = cut
        self._generation += 1
        self._pump(src)

    def _refill(self) -> None:
        now = self.clock.now_ns
        if self.capacity > 0:
            self.tokens = min(self.burst, self.tokens + (now - self.refilled_ns) / 1e9 * self.capacity)
        self.refilled_ns = now

    def _pump(self, src: str, generation: int | None = None) -> None:
        if generation is not None and generation != self._generation:
            return  # scheduled before a capacity change or a cut: a later pump took over
        self.pumping = False
        while self.queue and not self.cut:
            if self.capacity > 0:
                self._refill()
                if self.tokens < 1.0:
                    wait_ns = max(1, int((1.0 - self.tokens) / self.capacity * 1e9) + 1)
                    self.pumping = True
                    self.clock.after(wait_ns, self._pump, src, self._generation)
                    return
                self.tokens -= 1.0
            self._send(src, self.queue.popleft())

    def _send(self, src: str, msg: Message) -> None:
        self.window.count_out(1)
        lat, jit = self.latency_ms, self.jitter_ms
        delay_ms = max(0.0, lat + self.rng.uniform(-jit, jit)) if jit > 0 else lat
        arrival = max(self.clock.now_ns + round(delay_ms * 1e6) + self.hop_ns, self.last_arrival_ns)
        self.last_arrival_ns = arrival
        self.clock.at(arrival, self.arrive, src, msg)

    @property
    def ce(self) -> float:
        return self.window.ce


class SimBroker:
    """One broker of the time model; its handlers log in the order a broker process's do."""

    def __init__(
        self, cfg: BrokerConfig, clock: Clock, emit: Emitters, rng: random.Random, hop_ns: int = 0
    ) -> None:
        self.cfg = cfg
        self.id = cfg.id
        self.clock = clock
        self._emit = emit(cfg.id)
        self.view = ConfigView(cfg, self.link_state, clock.seconds)
        self.algo = make_algorithm(cfg.routing, self.view)
        window_s = cfg.congestion.window_ms / 1000.0
        self.links = {
            n.id: SimLink(clock, n, self._capacity(n), window_s, rng, hop_ns) for n in cfg.neighbours
        }
        self.server = Server(cfg.service_us, cfg.match_us_per_entry)  # its costs; the clock is virtual
        self.input: deque[tuple[str | None, Message, Callable[[], None] | None]] = deque()
        self.busy = False
        self.input_peak = 0
        self.sessions: dict[str, Receive] = {}  # local sub_id -> its subscriber's receive

    def _capacity(self, n: NeighbourConfig) -> float:
        return self.cfg.link_capacity_msgs_per_s if n.capacity_msgs_per_s is None else n.capacity_msgs_per_s

    def configured_capacity(self, neighbour: str) -> float:
        """The capacity of the link to ``neighbour`` as configured (a restore goes back to it)."""
        return self._capacity(self.view.neighbours[neighbour])

    def emit(self, ev: str, **fields: Any) -> None:
        self._emit(self.clock.now_ns, ev, **fields)

    def link_state(self, neighbour: str) -> LinkState:
        link = self.links.get(neighbour)
        if link is None:
            return LinkState()
        c = self.cfg.congestion
        ce, qlen = link.ce, len(link.queue)
        return LinkState(ce, qlen, ce > c.ce_threshold or qlen > c.queue_threshold)

    # --- the server ----------------------------------------------------------------------------

    def submit(self, from_hop: str | None, msg: Message, done: Callable[[], None] | None = None) -> None:
        """A message enters the input queue (``from_hop`` None: from a local client); ``done`` is called
        at the end of its service (a subscriber's ack)."""
        self.input.append((from_hop, msg, done))
        self.input_peak = max(self.input_peak, len(self.input))
        if not self.busy:
            self._serve_next()

    def _serve_next(self) -> None:
        from_hop, msg, done = self.input.popleft()
        self.busy = True
        entries = self.algo.table_size() if self.server.counts_entries else 0
        self.clock.after(round(self.server.cost_s(msg, entries) * 1e9), self._served, from_hop, msg, done)

    def _served(self, from_hop: str | None, msg: Message, done: Callable[[], None] | None) -> None:
        self.handle(from_hop, msg)
        if done is not None:
            done()
        self.busy = False
        if self.input:
            self._serve_next()

    # --- the handlers (scotbed.broker.runtime.Broker's, without the process around them) ------------

    def handle(self, from_hop: str | None, msg: Message) -> None:
        link = from_hop or ""
        if isinstance(msg, Publication):
            self.emit(contract.NOTIF_IN, pub_id=msg.pub_id, link=link, hops=msg.hops)
            self._publication(msg, self.algo.on_publication(msg, from_hop))
        elif isinstance(msg, Subscription):
            self.emit(contract.SUB_IN, sub_id=msg.sub_id, link=link, hops=msg.hops)
            self._forward(self.algo.on_subscription(msg, from_hop))
        else:
            self.emit(contract.UNSUB_IN, sub_id=msg.sub_id, link=link, hops=msg.hops)
            self._forward(self.algo.on_unsubscription(msg, from_hop))

    def _publication(self, pub: Publication, d: Decision) -> None:
        if d.match_us is not None:
            steps = self.algo.match_steps(d)
            self.emit(
                contract.MATCH,
                pub_id=pub.pub_id,
                us=0.0,  # matching costs no virtual time (docs/design.md §11)
                n=d.matched if d.matched is not None else len(d.deliver),
                **({} if steps is None else {"steps": steps}),
            )
        for sub_id in d.deliver:
            receive = self.sessions.get(sub_id)
            if receive is None:
                self.emit(contract.DROP, link="", reason="no_session", pub_id=pub.pub_id, sub_id=sub_id)
                continue
            self.emit(contract.DELIVER, pub_id=pub.pub_id, sub_id=sub_id, hops=pub.hops)
            receive(sub_id, pub, self.clock.now_ns)
        self._forward(d)

    def _forward(self, d: Decision) -> None:
        backlog = self.cfg.limits.max_link_backlog
        for f in d.forwards:
            link = self.links.get(f.hop)
            msg = f.msg
            if link is None:
                self.emit(contract.DROP, link=f.hop, reason="not_a_neighbour")
                continue
            if len(link.queue) >= backlog:
                self.emit(contract.DROP, link=f.hop, reason="backlog_overflow", **_id_of(msg))
                continue
            if isinstance(msg, Publication):
                self.emit(
                    contract.NOTIF_OUT, pub_id=msg.pub_id, link=f.hop, hops=msg.hops, dynamic=msg.dynamic
                )
            else:
                ev = contract.SUB_OUT if isinstance(msg, Subscription) else contract.UNSUB_OUT
                self.emit(ev, sub_id=msg.sub_id, link=f.hop, hops=msg.hops)
            link.put(self.id, msg)

    # --- periodic samples ----------------------------------------------------------------------

    def sample(self, ts_ns: int) -> None:
        """The ``queue`` and ``table`` samples a broker process logs every ``sample_interval_ms``."""
        qlen = len(self.input)
        self._emit(ts_ns, contract.QUEUE, link="", len=qlen, ce=0.0, peak=max(self.input_peak, qlen))
        self.input_peak = qlen
        for link in self.links.values():
            self._emit(ts_ns, contract.QUEUE, link=link.id, len=len(link.queue), ce=round(link.ce, 3))
        self._emit(ts_ns, contract.TABLE, size=self.algo.table_size())


def _id_of(msg: Message) -> dict[str, str]:
    return {"pub_id": msg.pub_id} if isinstance(msg, Publication) else {"sub_id": msg.sub_id}


class Network:
    """Every broker of a run, wired by their configs; samples catch up as the clock advances."""

    def __init__(
        self, configs: list[BrokerConfig], clock: Clock, emit: Emitters, seed: int, cost: HostCost = NO_COST
    ) -> None:
        self.clock = clock
        self.cost = cost
        rng = random.Random(seed)
        hop_ns = round(cost.hop_us * 1e3)
        self.brokers = {c.id: SimBroker(c, clock, emit, rng, hop_ns) for c in configs}
        for b in self.brokers.values():
            for link in b.links.values():
                link.arrive = self._arrival(link.id)
        periods = {c.log.sample_interval_ms for c in configs}
        self.sample_ns = round(min(periods) * 1e6) if periods and min(periods) > 0 else 0
        self._next_sample_ns = clock.now_ns + self.sample_ns
        clock.on_advance = self.sample_until

    def _arrival(self, dst: str) -> Callable[[str, Message], None]:
        broker = self.brokers[dst]

        def arrive(src: str, msg: Message) -> None:
            broker.submit(src, copy_with(msg, hops=msg.hops + 1))

        return arrive

    def link_fault(self, f: FaultSpec) -> None:
        """A link action of the fault timeline on both directions of ``f.broker``—``f.neighbour``."""
        assert f.neighbour is not None
        for a, b in ((f.broker, f.neighbour), (f.neighbour, f.broker)):
            broker = self.brokers[a]
            link = broker.links[b]
            if f.action == "latency":
                link.latency_ms, link.jitter_ms = float(f.latency_ms or 0.0), float(f.jitter_ms or 0.0)
            elif f.action == "capacity":
                link.set_capacity(a, float(f.capacity_msgs_per_s or 0.0))
            elif f.action == "cut":
                link.set_cut(a, True)
            else:  # restore: the configured capacity, the queue sent again
                link.set_capacity(a, broker.configured_capacity(b))
                link.set_cut(a, False)

    def sample_until(self, t_ns: int) -> None:
        """Log every broker's samples due before ``t_ns``."""
        while self.sample_ns and self._next_sample_ns < t_ns:
            for b in self.brokers.values():
                b.sample(self._next_sample_ns)
            self._next_sample_ns += self.sample_ns
