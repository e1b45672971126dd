"""The time model of docs/design.md §11 over the real routing plug-ins, in virtual time.

A :class:`SimBroker` is one FIFO server: a message taken from its input is served for
``service_us`` per unit (:func:`scotbed.broker.service.units`), and at the end of its service the
routing plug-in decides, local deliveries happen and the copies enter one :class:`SimLink` per
neighbour. A link sends within its token bucket (``capacity_msgs_per_s``, a burst of 10 ms of
capacity, as a broker's link sender) and a message arrives ``latency_ms ± jitter_ms`` after it
leaves, never before the one sent ahead of it. The brokers log what a broker process logs, from
the same handlers' order, stamped with the virtual clock; what a broker process adds of its own
(gRPC, batching, its event loop) is not modelled.

Broker faults follow a broker process's (:mod:`scotbed.orchestrator.faults`, :mod:`scotbed.broker.rejoin`):
a killed broker loses its input, the message in service, its output queues, what its links' delay lines
held, its routing state and its clients' sessions, while each neighbour's link to it holds its queue and
keeps what was in flight as unacknowledged; a stopped one first serves its input and drains its links
(:meth:`SimBroker.stop`). A restart is a new :class:`SimBroker`: each running neighbour resends the
unacknowledged messages, then its sent log as a replay (the plug-in rebuilds its table, none of the
resulting forwards is sent, no event is logged for it), then what it queued meanwhile, as ordinary
routing.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from typing import Any

from scotbed import contract
from scotbed.broker.eventlog import packed_field
from scotbed.broker.linkout import CeWindow
from scotbed.broker.rejoin import RoutingLog
from scotbed.broker.runtime import DRAIN_POLL_S, INPUT_POLL_S, STOP_GRACE_S, STOP_INPUT_S
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
#: a link's queued or sent message (None: a replay's control envelope) and whether it is replayed
Queued = tuple[Message | None, bool]
#: a broker's states: serving, stopping (SIGTERM: serving its input, draining its links), gone
UP, STOPPING, DOWN = "up", "stopping", "down"


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
        self.queue: deque[Queued] = deque()
        self.flight: deque[Queued] = deque()  # sent, not arrived: a broker's unacknowledged batches
        self.unacked: list[Queued] = []  # in flight when the neighbour went down: sent again first
        self.sent_log: RoutingLog[Message] = RoutingLog()  # replayed when the neighbour restarts
        self.capacity = max(0.0, capacity)
        self.burst = max(1.0, self.capacity / 100.0)
        self.tokens = 0.0  # empty at the start, as a broker's link sender
        self.refilled_ns = clock.now_ns
        self.window = CeWindow(window_s, clock.seconds)
        self.rng = rng
        self.last_arrival_ns = 0
        self.latency_ms, self.jitter_ms = neighbour.latency_ms, neighbour.jitter_ms
        self.cut = False  # a cut link holds its queue until restored (faults: cut, restore)
        self.down = False  # the neighbour is down: the queue is held until it rejoins
        self.pumping = False  # a send is scheduled for when the bucket holds a token
        self._generation = 0  # a capacity change makes the send scheduled before it stale
        self._epoch = 0  # the neighbour going down (or this end dying) voids the arrivals scheduled before
        self.arrive: Callable[[str, Message, bool], None] = lambda src, msg, replayed: None  # the network's

    def put(self, src: str, msg: Message) -> None:
        self.queue.append((msg, False))
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
        while self.queue and not (self.cut or self.down):
            if self.capacity > 0:
                self._refill()
                if self.tokens < 1.0:
                    wait_ns = max(1, int((1.0 - self.tokens) / self.capacity * 1e9) + 1)
                    self.pumping = True
                    self.clock.after(wait_ns, self._pump, src, self._generation)
                    return
                self.tokens -= 1.0
            self._send(src, self.queue.popleft())

    def _send(self, src: str, item: Queued, resent: bool = False) -> None:
        if not resent:  # a resent batch bypasses the bucket and the CE count, as a broker's link sender's
            self.window.count_out(1)
        lat, jit = self.latency_ms, self.jitter_ms
        delay_ms = max(0.0, lat + self.rng.uniform(-jit, jit)) if jit > 0 else lat
        arrival = max(self.clock.now_ns + round(delay_ms * 1e6) + self.hop_ns, self.last_arrival_ns)
        self.last_arrival_ns = arrival
        self.flight.append(item)
        self.clock.at(arrival, self._arrived, src, self._epoch)

    def _arrived(self, src: str, epoch: int) -> None:
        if epoch != self._epoch:
            return  # sent to a process that is gone, or by one
        msg, replayed = self.flight.popleft()
        if msg is not None:  # a replay's control envelope only marks what follows
            self.arrive(src, msg, replayed)

    def peer_down(self) -> None:
        """The neighbour went down: the queue is held, and what is in flight stays unacknowledged, to be
        sent again first when it rejoins (a broker's link sender loses its stream, not its batches)."""
        self.down = True
        self._epoch += 1
        self._generation += 1
        self.last_arrival_ns = 0  # what is sent again goes through a new delay line
        self.unacked.extend(self.flight)
        self.flight.clear()

    def close(self) -> None:
        """This end's broker is gone: its queue and what its delay line held are lost."""
        self.peer_down()
        self.queue.clear()
        self.unacked.clear()

    def rejoin(self, src: str) -> int:
        """The neighbour restarted: the unacknowledged messages sent again, then the sent log as a replay
        behind its control envelope, then what was queued meanwhile (:meth:`LinkOut.replay`'s order and
        rule); returns the replayed messages. What is left of an earlier replay is dropped."""
        queued = [item for item in self.queue if not item[1]]
        unacked = [item for item in self.unacked if not item[1]]
        pending = {id(m) for m, _ in (*queued, *unacked)}
        block: list[Queued] = [(None, True)]
        block += [(m, True) for m in self.sent_log.entries(lambda m: id(m) in pending)]
        self.queue = deque(block + queued)
        self.window.count_in(len(block))
        self.down, self.unacked = False, []
        self._generation += 1
        for item in unacked:
            self._send(src, item, resent=True)
        self._pump(src)
        return len(block) - 1

    @property
    def ce(self) -> float:
        return self.window.ce


class SimBroker:
    """One broker process of the time model (one incarnation: a restart makes a new one); its handlers
    log in the order a broker process's do."""

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
        self.input: deque[tuple[str | None, Message, Callable[[], None] | None, bool]] = deque()
        self.busy = False
        self.input_peak = 0
        self.sessions: dict[str, Receive] = {}  # local sub_id -> its subscriber's receive
        self.state = UP

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

    def submit(
        self,
        from_hop: str | None,
        msg: Message,
        done: Callable[[], None] | None = None,
        replayed: bool = False,
    ) -> None:
        """A message enters the input queue (``from_hop`` None: from a local client); ``done`` is called
        at the end of its service (a subscriber's ack); ``replayed``: a neighbour's replay. A broker that
        is gone takes nothing, a stopping one nothing from a client."""
        if self.state == DOWN or (from_hop is None and self.state == STOPPING):
            return
        self.input.append((from_hop, msg, done, replayed))
        self.input_peak = max(self.input_peak, len(self.input))
        if not self.busy:
            self._serve_next()

    def _serve_next(self) -> None:
        from_hop, msg, done, replayed = self.input.popleft()
        self.busy = True
        cost_ns = round(self.server.cost_s(msg, self.algo.table_size) * 1e9)
        self.clock.after(cost_ns, self._served, from_hop, msg, done, replayed)

    def _served(
        self, from_hop: str | None, msg: Message, done: Callable[[], None] | None, replayed: bool
    ) -> None:
        if self.state == DOWN:
            return  # killed in its service: the message is lost with the process
        self.handle(from_hop, msg, replayed)
        if done is not None:
            done()
        self.busy = False
        if self.input:
            self._serve_next()

    # --- faults: a broker process's SIGKILL and SIGTERM ----------------------------------------

    def kill(self) -> None:
        """SIGKILL: the input, the message in service, the output queues and delay lines, the routing
        state and the clients' sessions are lost at once."""
        self.state = DOWN
        self.input.clear()
        self.sessions.clear()
        for link in self.links.values():
            link.close()

    def stop(self, gone: Callable[[], None]) -> None:
        """SIGTERM, as ``python -m scotbed.broker`` stops: no more client input and its sessions end;
        the input is served to the end (at most ``STOP_INPUT_S``), then the output queues get
        ``STOP_GRACE_S`` to drain over the links that are up, both polled as the process polls; then
        what is left is lost as in a kill, and ``gone`` is called."""
        self.state = STOPPING
        self.sessions.clear()
        self._wait_input(self.clock.now_ns + round(STOP_INPUT_S * 1e9), gone)

    def _wait_input(self, deadline_ns: int, gone: Callable[[], None]) -> None:
        if (self.busy or self.input) and self.clock.now_ns < deadline_ns:
            self.clock.after(round(INPUT_POLL_S * 1e9), self._wait_input, deadline_ns, gone)
            return
        self._wait_drained(self.clock.now_ns + round(STOP_GRACE_S * 1e9), gone)

    def _wait_drained(self, deadline_ns: int, gone: Callable[[], None]) -> None:
        if not self.drained() and self.clock.now_ns < deadline_ns:
            self.clock.after(round(DRAIN_POLL_S * 1e9), self._wait_drained, deadline_ns, gone)
            return
        self.kill()
        gone()

    def drained(self) -> bool:
        """Nothing served or waiting, every link empty (sent and arrived) or down (the runtime's)."""
        if self.busy or self.input:
            return False
        return all(not (link.queue or link.flight) or link.down for link in self.links.values())

    # --- the handlers (scotbed.broker.runtime.Broker's, without the process around them) ------------

    def handle(self, from_hop: str | None, msg: Message, replayed: bool = False) -> None:
        """One message at the end of its service; a replayed one is logged nowhere and its forwards only
        recorded in the sent logs (the neighbours hold them already)."""
        link = from_hop or ""
        if isinstance(msg, Publication):
            self.emit(contract.NOTIF_IN, pub_id=msg.pub_id, link=link, hops=msg.hops)
            self._publication(msg, self.algo.on_publication(msg, from_hop))
        elif isinstance(msg, Subscription):
            if not replayed:
                self.emit(contract.SUB_IN, sub_id=msg.sub_id, link=link, hops=msg.hops)
            self._forward(self.algo.on_subscription(msg, from_hop), replayed)
        else:
            if not replayed:
                self.emit(contract.UNSUB_IN, sub_id=msg.sub_id, link=link, hops=msg.hops)
            self._forward(self.algo.on_unsubscription(msg, from_hop), replayed)

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

    def _forward(self, d: Decision, replayed: bool = False) -> None:
        backlog = self.cfg.limits.max_link_backlog
        for f in d.forwards:
            link = self.links.get(f.hop)
            msg = f.msg
            if link is None:
                self.emit(contract.DROP, link=f.hop, reason="not_a_neighbour")
                continue
            if not isinstance(msg, Publication):
                link.sent_log.record(msg, msg)
                if replayed:
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
                self.emit(ev, sub_id=msg.sub_id, link=f.hop, hops=msg.hops, **packed_field(msg))
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
        self._emit = emit
        self._rng = random.Random(seed)
        self._hop_ns = round(cost.hop_us * 1e3)
        self.configs = {c.id: c for c in configs}
        self.brokers: dict[str, SimBroker] = {}
        for c in configs:
            self._start(c.id)
        periods = {c.log.sample_interval_ms for c in configs}
        self.sample_ns = round(min(periods) * 1e6) if periods and min(periods) > 0 else 0
        self._next_sample_ns = clock.now_ns + self.sample_ns
        clock.on_advance = self.sample_until

    def _start(self, bid: str) -> SimBroker:
        """A new process of broker ``bid``: empty state, its links wired to whatever runs then."""
        b = self.brokers[bid] = SimBroker(self.configs[bid], self.clock, self._emit, self._rng, self._hop_ns)
        for link in b.links.values():
            link.arrive = self._arrival(link.id)
        return b

    def _arrival(self, dst: str) -> Callable[[str, Message, bool], None]:
        def arrive(src: str, msg: Message, replayed: bool) -> None:
            self.brokers[dst].submit(src, copy_with(msg, hops=msg.hops + 1), replayed=replayed)

        return arrive

    def serving(self, bid: str) -> bool:
        """Whether broker ``bid`` takes clients (what a client's health probe asks)."""
        return self.brokers[bid].state == UP

    def kill(self, bid: str) -> None:
        """SIGKILL broker ``bid`` (:meth:`SimBroker.kill`); its neighbours' links to it hold."""
        self._unreachable(bid)
        self.brokers[bid].kill()

    def stop(self, bid: str, gone: Callable[[], None]) -> None:
        """SIGTERM broker ``bid`` (:meth:`SimBroker.stop`): its server stops at once, so its neighbours'
        links to it hold from now on; ``gone`` is called once the process has exited."""
        self._unreachable(bid)
        self.brokers[bid].stop(gone)

    def _unreachable(self, bid: str) -> None:
        for n in self.brokers[bid].links:
            self.brokers[n].links[bid].peer_down()

    def restart(self, bid: str) -> None:
        """A new process of the stopped or killed ``bid``: every link to a running neighbour is up at
        once, the neighbour's replay at its head (:meth:`SimLink.rejoin`); a link to a neighbour that is
        down holds until that one restarts."""
        b = self._start(bid)
        for n, link in b.links.items():
            nb = self.brokers[n]
            if nb.state == UP:
                nb.links[bid].rejoin(n)
            else:
                link.peer_down()

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
                if b.state != DOWN:  # a process that is gone samples nothing
                    b.sample(self._next_sample_ns)
            self._next_sample_ns += self.sample_ns
