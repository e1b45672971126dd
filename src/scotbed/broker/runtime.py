"""The broker's asyncio core: one input queue, one processing loop, one output queue per link.

Data path. Every message that enters the broker (from a local client through
:mod:`scotbed.broker.server`, or from a neighbour through a link stream) is
decoded once into a domain message and put on the *input queue*. A single
processing loop takes messages off it and calls the routing plug-in — the
plug-in is never called from anywhere else, so it needs no locks. The
plug-in's :class:`~scotbed.routing.base.Decision` is executed here:
each forwarded message is encoded once (one envelope shared by every next
hop) and appended to that link's *output queue*; each local delivery goes to
the subscriber's session queue. A sender task per link
(:mod:`scotbed.broker.links`) drains the output queue in batches.

Link capacity emulation. A token bucket in envelopes/s sits between the
output queue and the wire (0 = unlimited), so a slow link is reproducible
on one machine; ``Admin.SetLinkCapacity`` changes it at runtime.

Congestion element. Per link and per window of ``congestion.window_ms``:
In = envelopes appended to the output queue, Out = envelopes written to the
wire. CE = In / Out when Out > 0. When Out = 0, CE = In (the window's
arrivals all stayed queued, as if Out were one envelope), so an idle link
has CE 0 and a stalled link with arrivals has CE ≥ 1. A link is
*overloaded* when CE > ``ce_threshold`` or its output queue is longer than
``queue_threshold``. The link status table (:meth:`Broker.link_state`) is
what plug-ins see through ``BrokerView.link_state``.

Service time. ``service_us`` > 0 makes the processing loop one server with that time per message
(:mod:`scotbed.broker.service`), so a slow broker's backlog waits in its input queue; the input
``queue`` sample carries ``peak``, the longest the input queue was since the previous sample.

Counters (``Admin.Status.counters``): ``sub_in``, ``sub_out``, ``unsub_in``,
``unsub_out``, ``notif_in``, ``notif_out`` count inter-broker envelopes only
(so their sums over brokers are the IMs); ``client_sub``, ``client_unsub``,
``client_pub`` count client operations; ``match``, ``deliver``,
``duplicate``, ``drop``, ``rejected``, ``errors`` the rest. The event log has
``sub_in``/``notif_in``... for local clients too, with ``link`` "". ``replay_out``/``replay_in``
count the routing envelopes replayed to and by a restarted neighbour (:mod:`scotbed.broker.rejoin`),
apart from the IMs.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scotbed.broker.envelopes import delivery, encode, notification_pb, table_entry
from scotbed.broker.eventlog import EventLog, packed_field
from scotbed.broker.limits import envelope_fits
from scotbed.broker.linkout import LinkOut
from scotbed.broker.looplag import LoopProbe
from scotbed.broker.rejoin import REPLAYED
from scotbed.broker.service import Server
from scotbed.broker.sessions import Owners, Session, SessionRefused
from scotbed.broker.treeswap import End, TreeSwap
from scotbed.broker.view import ConfigView
from scotbed.config import BrokerConfig, NeighbourConfig
from scotbed.contract import (
    DELIVER,
    DROP,
    LOOP,
    MATCH,
    NOTIF_IN,
    NOTIF_OUT,
    QUEUE,
    SUB_IN,
    SUB_OUT,
    TABLE,
    UNSUB_IN,
    UNSUB_OUT,
)
from scotbed.messages import Message, Publication, Subscription, Unsubscription
from scotbed.routing import make_algorithm
from scotbed.routing.base import Decision, LinkState, RoutingAlgorithm
from scotbed.v1 import scotbed_pb2 as pb

if TYPE_CHECKING:
    from scotbed.selforg.manager import TopologyManager

log = logging.getLogger("scotbed.broker")

#: a stopping broker (SIGTERM) serves its input for at most this long, polling every INPUT_POLL_S, then
#: gives its output queues STOP_GRACE_S (``--stop-grace``'s default) to drain, polling every DRAIN_POLL_S
STOP_INPUT_S = 30.0
STOP_GRACE_S = 2.0
INPUT_POLL_S = 0.002
DRAIN_POLL_S = 0.005


def _topology_manager(broker: Broker) -> TopologyManager:
    """The broker's self-organising topology manager; imported only by the brokers that run one (its
    heuristics load numpy, a third of a broker's start)."""
    from scotbed.selforg.manager import TopologyManager

    return TopologyManager(broker)


# (from hop or None for a local client, message or END marker, raw pb notification)
Item = tuple[str | None, Message | End, Any]


class Broker:
    """One broker's state and processing loop; I/O adapters (server, links) feed it."""

    def __init__(self, cfg: BrokerConfig, events: EventLog | None = None) -> None:
        self.cfg = cfg
        self.id = cfg.id
        self.events = events or EventLog(cfg.id, cfg.log.path, cfg.log.buffer_events)
        self.view = ConfigView(cfg, self.link_state, time.monotonic)
        self.algo: RoutingAlgorithm = make_algorithm(cfg.routing, self.view)
        self.links: dict[str, LinkOut] = {n.id: self.link_out(n) for n in cfg.neighbours}
        self.senders: dict[str, asyncio.Task[None]] = {}  # one sender task per link, once started
        self.incarnation = ""
        self.swap = TreeSwap(self)
        self.topology = _topology_manager(self) if cfg.topology_manager else None
        self.input: asyncio.Queue[Item] = asyncio.Queue()
        self.input_peak = 0  # the input queue's longest since the last ``queue`` sample
        self.server = Server(cfg.service_us, cfg.match_us_per_entry)  # the service time, when on
        self.sessions: dict[str, Session] = {}
        self.owners = Owners()
        self.counters: Counter[str] = Counter()
        self.busy = False
        self.stopping = False
        self.last_activity_ns = time.time_ns()
        self.match_observer: Callable[[float], None] | None = None  # the metrics histogram, when on
        self._tasks: list[asyncio.Task[None]] = []
        self.loop_probe = LoopProbe()
        self.loop_lag_ms_max = 0.0  # the worst lag of the last `loop` sample, for Admin.Status
        self._log_pending = asyncio.Event()  # the flusher's wake-up: a line waits to be written

    def link_out(self, n: NeighbourConfig) -> LinkOut:
        cap = n.capacity_msgs_per_s
        capacity = cap if cap is not None else self.cfg.link_capacity_msgs_per_s
        return LinkOut(n, capacity, self.cfg.limits.max_link_backlog, self.cfg.congestion.window_ms / 1000.0)

    def start_links(self, incarnation: str) -> None:
        """One sender task per link; links opened later by :meth:`relink` get theirs there."""
        self.incarnation = incarnation
        for link in self.links.values():
            self.start_sender(link)

    def start_sender(self, link: LinkOut, opening: int = 0) -> None:
        """``opening`` tells a reopened link's stream from its earlier one (sequence numbers restart)."""
        from scotbed.broker.links import LinkSender, stream_incarnation  # links imports this module

        incarnation = stream_incarnation(self.incarnation, opening)
        self.senders[link.id] = asyncio.create_task(LinkSender(self, link, incarnation).run())

    async def stop_links(self) -> None:
        tasks = list(self.senders.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.senders = {}

    # --- link status table ---------------------------------------------------------------

    def link_state(self, neighbour: str) -> LinkState:
        link = self.links.get(neighbour)
        if link is None:
            return LinkState()
        c = self.cfg.congestion
        qlen = len(link.queue)
        return LinkState(link.ce, qlen, link.ce > c.ce_threshold or qlen > c.queue_threshold)

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._loop(), name="process"),
            asyncio.create_task(self._flusher(), name="flush"),
        ]
        if self.server.active:
            log.info("%s: service time %.0f µs per message", self.id, self.cfg.service_us)
        if self.cfg.log.sample_interval_ms > 0:
            every_s = self.cfg.log.sample_interval_ms / 1000.0
            self._tasks.append(asyncio.create_task(self.loop_probe.run(every_s, self.sample), name="sample"))

    async def stop_tasks(self) -> None:
        if self.topology is not None:
            await self.topology.stop()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    def quiescent(self) -> bool:
        """Every queue empty, nothing being processed, every sent batch acknowledged."""
        if self.busy or not self.input.empty() or self.swap.busy():
            return False
        return all(not link.queue and not link.unacked for link in self.links.values())

    async def wait_quiescent(self, timeout_s: float, poll_s: float = 0.005) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self.quiescent():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(poll_s)
        return True

    def drained(self) -> bool:
        """Quiescent except for links that are down (their queues cannot drain now); used when stopping."""
        if self.busy or not self.input.empty():
            return False
        return all(not (link.queue or link.unacked) or not link.connected for link in self.links.values())

    async def wait_drained(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self.drained():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(DRAIN_POLL_S)
        return True

    async def wait_input_empty(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while self.busy or not self.input.empty():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(INPUT_POLL_S)
        return True

    # --- entry points for the adapters ------------------------------------------------------

    def submit(self, from_hop: str | None, msg: Message | End, raw: Any = None) -> None:
        self.input.put_nowait((from_hop, msg, raw))
        self.input_peak = max(self.input_peak, self.input.qsize())

    def open_session(self, sub: Subscription, subscriber: str, peer: str = "") -> Session:
        session = Session(sub, subscriber, peer, self.cfg.limits.max_session_backlog_bytes)
        self.sessions[sub.sub_id] = session
        self.counters["client_sub"] += 1
        self.submit(None, sub)
        return session

    def close_session(self, sub_id: str, peer: str | None = None) -> bool:
        """End a subscriber's session; its subscription is removed as an unsubscription. With ``peer``
        (an Unsubscribe call's connection), only a session that connection opened: another client's
        subscription is not found."""
        session = self.sessions.get(sub_id)
        if session is None or session.closed or (peer is not None and peer != session.peer):
            return False
        del self.sessions[sub_id]
        session.closed = True
        session.end()
        if not self.stopping:
            self.counters["client_unsub"] += 1
            s = session.sub
            self.submit(None, Unsubscription(s.sub_id, self.id, origin_ns=time.time_ns(), filter=s.filter))
        return True

    def neighbour_restarted(self, neighbour: str) -> None:
        """A new incarnation of ``neighbour`` said hello: put the link's sent log at the head of its queue
        (over again if an earlier replay was still under way)."""
        n = self.links[neighbour].replay()
        self.counters["neighbour_restarts"] += 1
        self.counters["replay_out"] += n
        log.info("%s: %s restarted; replaying %d routing envelopes", self.id, neighbour, n)

    def drop(self, link: str, reason: str, **fields: Any) -> None:
        self.counters[DROP] += 1
        self.events.emit(DROP, link=link, reason=reason, **fields)

    # --- the processing loop ----------------------------------------------------------------

    async def _loop(self) -> None:
        q = self.input
        while True:
            item = await q.get()
            self.busy = True
            try:
                if self.server.active:  # one message per service time (scotbed.broker.service)
                    await self.server.serve(self.server.cost_s(item[1], self.algo.table_size))
                    self.handle(item)
                    self.server.ended(backlog=not q.empty())
                    continue
                self.handle(item)
                for _ in range(255):  # drain a burst without yielding, then let the I/O tasks run
                    try:
                        item = q.get_nowait()
                    except asyncio.QueueEmpty:
                        break
                    self.handle(item)
            finally:
                self.busy = False
                self.last_activity_ns = time.time_ns()

    def handle(self, item: Item) -> None:
        """Process one item of the input (a message from a hop, with its raw bytes): the service loop
        calls it, and a finished tree swap for the items it held back."""
        from_hop, msg, raw = item
        if isinstance(msg, End):
            self.swap.on_end(from_hop or "", msg)
            return
        if not self.swap.admits(item):
            return
        replay = raw is REPLAYED
        try:
            if isinstance(msg, Publication):
                self._on_publication(from_hop, msg, raw)
            elif isinstance(msg, Subscription):
                self._on_subscription(from_hop, msg, replay)
            else:
                self._on_unsubscription(from_hop, msg, replay)
        except Exception as e:  # one bad message must not stop the broker; it is logged, never silent
            self.counters["errors"] += 1
            log.exception("%s: routing failed on %s", self.id, type(msg).__name__)
            reason = f"error: {type(e).__name__}: {e}"
            self.drop(from_hop or "", reason)
            if from_hop is None and isinstance(msg, Subscription):
                self._refuse_session(msg.sub_id, f"routing {self.cfg.routing!r} failed on it: {reason}")

    def _refuse_session(self, sub_id: str, why: str, taken: bool = False) -> None:
        """A local subscription the broker could not take is refused to its client, never acknowledged."""
        session = self.sessions.get(sub_id)
        if session is not None and not session.accepted.done():
            session.accepted.set_exception(SessionRefused(f"subscription {sub_id!r}: {why}", taken))

    def _on_subscription(self, from_hop: str | None, sub: Subscription, replay: bool = False) -> None:
        link = from_hop or ""
        if replay:
            self.counters["replay_in"] += 1
        elif from_hop is not None:
            self.counters[SUB_IN] += 1
        if not replay:  # a replay is counted apart and not logged: the IM counts stay those of the routing
            self.events.emit(SUB_IN, sub_id=sub.sub_id, link=link, hops=sub.hops)
        if (owner := self._foreign(link, sub.sub_id, sub.host_broker)) is not None:
            if from_hop is None:
                self._refuse_session(sub.sub_id, f"is already active at broker {owner}", taken=True)
            return
        self.owners.take(sub.sub_id, sub.host_broker)
        d = self.algo.on_subscription(sub, from_hop)
        if d.duplicate:
            self.counters["duplicate"] += 1
        if from_hop is None:
            session = self.sessions.get(sub.sub_id)
            if session is not None and not session.accepted.done():
                session.accepted.set_result(None)
        self._forward(d, SUB_OUT, "sub_id", replay=replay)

    def _on_unsubscription(self, from_hop: str | None, unsub: Unsubscription, replay: bool = False) -> None:
        link = from_hop or ""
        if replay:
            self.counters["replay_in"] += 1
        elif from_hop is not None:
            self.counters[UNSUB_IN] += 1
        if not replay:  # a replay is counted apart and not logged: the IM counts stay those of the routing
            self.events.emit(UNSUB_IN, sub_id=unsub.sub_id, link=link, hops=unsub.hops)
        if self._foreign(link, unsub.sub_id, unsub.host_broker) is not None:
            return
        self.owners.release(unsub.sub_id)
        d = self.algo.on_unsubscription(unsub, from_hop)
        if d.duplicate:
            self.counters["duplicate"] += 1
        self._forward(d, UNSUB_OUT, "sub_id", replay=replay)

    def _foreign(self, link: str, sub_id: str, host: str) -> str | None:
        """The owner, when a (un)subscription comes under an id another host broker's subscription holds
        here: then it is dropped, so no client takes over or cancels another's subscription by reusing
        its id at another broker."""
        owner = self.owners.elsewhere(sub_id, host)
        if owner is not None:
            self.drop(link, "sub_id_in_use", sub_id=sub_id, host=host, owner=owner)
        return owner

    def _on_publication(self, from_hop: str | None, pub: Publication, raw: pb.Notification | None) -> None:
        emit = self.events.emit
        if from_hop is not None:
            self.counters[NOTIF_IN] += 1
        emit(NOTIF_IN, pub_id=pub.pub_id, link=from_hop or "", hops=pub.hops)
        d = self.algo.on_publication(pub, from_hop)
        if self.topology is not None and (from_hop is None or d.deliver):
            self.topology.cached(pub.pub_id)
        if d.duplicate:
            self.counters["duplicate"] += 1
        if d.match_us is not None:
            self.counters[MATCH] += 1
            n = d.matched if d.matched is not None else len(d.deliver)
            steps = self.algo.match_steps(d)
            emit(
                MATCH,
                pub_id=pub.pub_id,
                us=round(d.match_us, 1),
                n=n,
                **({} if steps is None else {"steps": steps}),
            )
            if self.match_observer is not None:
                self.match_observer(d.match_us)
        if d.deliver:
            self._deliver(pub, raw, d.deliver)
        if d.forwards:
            self._forward(d, NOTIF_OUT, "pub_id", raw)

    def _deliver(self, pub: Publication, raw: pb.Notification | None, sub_ids: list[str]) -> None:
        if raw is None:
            raw = notification_pb(pub)
        now = time.time_ns()
        for sub_id in sub_ids:
            session = self.sessions.get(sub_id)
            if session is None or session.closed:
                self.drop("", "no_session", pub_id=pub.pub_id, sub_id=sub_id)
                continue
            if not session.offer(delivery(raw, sub_id, now, pub.hops)):
                self.drop(
                    "",
                    "subscriber_overflow",
                    pub_id=pub.pub_id,
                    sub_id=sub_id,
                    queued_bytes=session.queued_bytes,
                    limit=session.limit,
                )
                continue
            self.counters[DELIVER] += 1
            self.events.emit(DELIVER, pub_id=pub.pub_id, sub_id=sub_id, hops=pub.hops)

    def _forward(
        self, d: Decision, ev: str, id_field: str, raw: pb.Notification | None = None, replay: bool = False
    ) -> None:
        cache: dict[int, tuple[pb.Envelope, int] | None] = {}  # one encoding and one size per message
        emit = self.events.emit
        for f in d.forwards:
            link = self.links.get(f.hop)
            if link is None:
                self.counters["errors"] += 1
                self.drop(f.hop, "not_a_neighbour")
                continue
            msg = f.msg
            if id(msg) not in cache:
                cache[id(msg)] = self._sendable(encode(msg, raw), id_field, msg)
            sized = cache[id(msg)]
            if sized is None:
                link.dropped += 1
                continue
            if ev != NOTIF_OUT:
                link.sent_log.record(msg, sized)
                if replay:  # the old process had sent it: only the log learns it again (broker.rejoin)
                    continue
            if len(link.queue) >= link.backlog:
                link.dropped += 1
                self.drop(f.hop, "backlog_overflow", **{id_field: getattr(msg, id_field)})
                continue
            link.queue.append(sized)
            link.window.count_in(1)
            link.wake.set()
            if ev != NOTIF_OUT:  # a decision on an unsubscription may send subscriptions, and back
                ev = "sub_out" if isinstance(msg, Subscription) else "unsub_out"
            self.counters[ev] += 1
            if ev == NOTIF_OUT:
                assert isinstance(msg, Publication)
                emit(ev, pub_id=msg.pub_id, link=f.hop, hops=msg.hops, dynamic=msg.dynamic)
            else:
                emit(ev, sub_id=getattr(msg, "sub_id", ""), link=f.hop, hops=msg.hops, **packed_field(msg))

    def _sendable(self, env: pb.Envelope, id_field: str, msg: Message) -> tuple[pb.Envelope, int] | None:
        """``(env, its bytes)``, or None (dropped and counted) when it is larger than any batch may be.

        The size is measured here once (``ByteSize`` encodes the message); the link sender batches by it.
        """
        size = env.ByteSize()
        if envelope_fits(size, self.cfg.limits):
            return env, size
        self.drop(
            "",
            "oversized",
            bytes=size,
            limit=self.cfg.limits.batch_bytes,
            **{id_field: getattr(msg, id_field)},
        )
        return None

    # --- periodic tasks -------------------------------------------------------------------------

    def sample(self) -> None:
        only_samples = not self.events.pending
        self._emit_samples()
        if only_samples:  # write them now instead of waking the flusher for them (an idle broker's cost)
            self.events.flush()
            self._log_pending.clear()

    def _emit_samples(self) -> None:
        emit = self.events.emit
        qlen = self.input.qsize()
        emit(QUEUE, link="", len=qlen, ce=0.0, peak=max(self.input_peak, qlen))
        self.input_peak = qlen
        for link in self.links.values():
            emit(QUEUE, link=link.id, len=len(link.queue), ce=round(link.ce, 3))
        emit(TABLE, size=self.algo.table_size())
        loop = self.loop_probe.take()
        self.loop_lag_ms_max = loop["lag_ms_max"]
        emit(LOOP, **loop)

    async def _flusher(self) -> None:
        """Writes the event log ``flush_interval_ms`` after a line starts waiting; idle, it sleeps."""
        period = self.cfg.log.flush_interval_ms / 1000.0
        loop = asyncio.get_running_loop()
        pending = self._log_pending
        on_loop = threading.get_ident()

        def wake() -> None:  # emit() may run on another thread: Event.set is for the loop's own
            if threading.get_ident() == on_loop:
                pending.set()
            else:
                loop.call_soon_threadsafe(pending.set)

        self.events.on_pending = wake
        if self.events.pending:
            pending.set()
        while True:
            await pending.wait()
            pending.clear()
            await asyncio.sleep(period)
            self.events.flush()

    # --- admin views ------------------------------------------------------------------------------

    def status(self) -> pb.StatusReply:
        c = self.cfg.congestion
        reply = pb.StatusReply(
            broker_id=self.id,
            input_len=self.input.qsize(),
            table_size=self.algo.table_size(),
            quiescent=self.quiescent(),
            local_subscriptions=len(self.sessions),
            last_activity_ns=self.last_activity_ns,
            routing=self.cfg.routing,
            matching=self.cfg.matching,
            tree_version=self.swap.version,
            tree_finished=self.swap.finished,
            loop_lag_ms_max=self.loop_lag_ms_max,
        )
        for name, value in self.counters.items():
            reply.counters[name] = value
        for link in self.links.values():
            qlen = len(link.queue)
            reply.links.add(
                neighbour=link.id,
                kind=link.neighbour.kind,
                output_len=qlen,
                ce=link.ce,
                overloaded=link.ce > c.ce_threshold or qlen > c.queue_threshold,
                sent=link.sent,
                received=link.received,
                dropped=link.dropped,
                connected=link.connected,
                capacity_msgs_per_s=link.capacity,
                unacked=link.unacked_envelopes,
                latency_ms=link.latency[0],
                jitter_ms=link.latency[1],
            )
        return reply

    def table(self) -> pb.TableReply:
        reply = pb.TableReply()
        for e in self.algo.entries():
            reply.entries.append(table_entry(e))
        return reply

    def set_latency(self, neighbour: str, latency_ms: float, jitter_ms: float) -> None:
        """Propagation delay of the link to ``neighbour`` ("" = every link), picked up by its sender."""
        if neighbour and neighbour not in self.links:
            raise KeyError(neighbour)
        for link in self.links.values():
            if not neighbour or link.id == neighbour:
                link.set_latency(latency_ms, jitter_ms)

    def set_capacity(self, neighbour: str, capacity: float) -> None:
        if neighbour and neighbour not in self.links:
            raise KeyError(neighbour)
        for link in self.links.values():
            if not neighbour or link.id == neighbour:
                link.set_capacity(capacity)
