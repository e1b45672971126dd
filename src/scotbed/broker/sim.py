"""In-process simulator: the real routing plug-ins on a topology, no network.

Messages travel in one global FIFO (links are reliable and ordered), every
inter-broker message is recorded, and the link status table of every directed
link can be set by hand. The subscription traffic is also logged as the
brokers log it (``sub_in``, ``sub_out``, ``unsub_in``, ``unsub_out``; docs/design.md §5),
stamped by a logical clock, for the analysis's propagation trace. It is what proves exact message counts and
exactly-once delivery quickly and deterministically; the real broker
processes prove the same on the wire in the slow tests.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scotbed import contract
from scotbed.config import NeighbourConfig
from scotbed.filters import Filter
from scotbed.matching import Matcher, make_matcher
from scotbed.messages import Message, Publication, Subscription, Unsubscription, copy_with
from scotbed.routing import make_algorithm
from scotbed.routing.base import LinkState, RoutingAlgorithm
from scotbed.topology import Scot


@dataclass(frozen=True)
class Sent:
    src: str
    dst: str
    msg: Message

    @property
    def kind(self) -> str:
        return type(self.msg).__name__.lower()


class _View:
    def __init__(self, net: SimNetwork, broker: str) -> None:
        b = net.scot.by_id[broker]
        self._net = net
        self.id = broker
        self.vertex = b.vertex
        self.cluster = b.cluster
        self.type = b.type
        self.clusters = net.scot.m
        self.params: Mapping[str, Any] = net.params
        self.neighbours: Mapping[str, NeighbourConfig] = {
            n.id: NeighbourConfig(n.id, n.kind, n.type, n.cluster, n.region, "sim:0")
            for n in net.scot.neighbours(broker)
        }

    def link_state(self, neighbour: str) -> LinkState:
        return self._net.link_states.get((self.id, neighbour), LinkState())

    def make_matcher(self) -> Matcher:
        return make_matcher(self._net.matching)

    def clock(self) -> float:
        return self._net.time_s()


@dataclass
class SimNetwork:
    scot: Scot
    routing: str
    matching: str = "naive"
    params: dict[str, Any] = field(default_factory=dict)
    link_states: dict[tuple[str, str], LinkState] = field(default_factory=dict)
    #: the routing plug-ins' clock in seconds (``BrokerView.clock``); a test may set its own
    time_s: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self.brokers: dict[str, RoutingAlgorithm] = {
            b.id: make_algorithm(self.routing, _View(self, b.id)) for b in self.scot.brokers
        }
        self.sent: list[Sent] = []
        self.deliveries: Counter[tuple[str, str]] = Counter()  # (pub_id, sub_id) -> copies
        self.delivered_at: dict[tuple[str, str], str] = {}
        self.matched_at: Counter[str] = Counter()  # broker -> notifications it matched
        self.host: dict[str, str] = {}  # sub_id -> host broker
        #: (ts, node, ev, sub_id, link) of the subscription traffic, ts from :meth:`tick`
        self.log: list[tuple[int, str, str, str, str]] = []
        self.clock = 0
        self._queue: deque[tuple[str, str, Message]] = deque()

    # --- driving -----------------------------------------------------------------------

    def subscribe(self, sub_id: str, broker: str, flt: Filter | str) -> int:
        """Issue a subscription at ``broker``; returns the inter-broker messages it caused."""
        if isinstance(flt, str):
            flt = Filter.parse(flt)
        self.host[sub_id] = broker
        return self._run(broker, Subscription(sub_id, flt, broker))

    def unsubscribe(self, sub_id: str, flt: Filter | str | None = None) -> int:
        if isinstance(flt, str):
            flt = Filter.parse(flt)
        broker = self.host.pop(sub_id)
        return self._run(broker, Unsubscription(sub_id, broker, filter=flt))

    def publish(self, pub_id: str, broker: str, attrs: Mapping[str, Any]) -> int:
        return self._run(broker, Publication(pub_id, "sim", dict(attrs), source_broker=broker))

    def overload(self, src: str, dst: str, ce: float = 2.0, queue_len: int = 1000) -> None:
        """Mark the directed link src → dst overloaded in src's link status table."""
        if dst not in self.brokers[src].view.neighbours:
            raise KeyError(f"{src} has no link to {dst}")
        self.link_states[(src, dst)] = LinkState(ce=ce, queue_len=queue_len, overloaded=True)

    def _run(self, broker: str, msg: Message) -> int:
        before = len(self.sent)
        self._dispatch(broker, None, msg)
        while self._queue:
            src, dst, m = self._queue.popleft()
            self._dispatch(dst, src, copy_with(m, hops=m.hops + 1))
        return len(self.sent) - before

    def tick(self) -> int:
        """The logical clock, advanced by one: every logged event and every caller's stamp is distinct."""
        self.clock += 1
        return self.clock

    def _log(self, broker: str, ev: str, sub_id: str, link: str) -> None:
        self.log.append((self.tick(), broker, ev, sub_id, link))

    def _dispatch(self, broker: str, from_hop: str | None, msg: Message) -> None:
        algo = self.brokers[broker]
        if isinstance(msg, Subscription):
            self._log(broker, contract.SUB_IN, msg.sub_id, from_hop or "")
            d = algo.on_subscription(msg, from_hop)
        elif isinstance(msg, Unsubscription):
            self._log(broker, contract.UNSUB_IN, msg.sub_id, from_hop or "")
            d = algo.on_unsubscription(msg, from_hop)
        else:
            d = algo.on_publication(msg, from_hop)
            if d.match_us is not None:
                self.matched_at[broker] += 1
            for sub_id in d.deliver:
                self.deliveries[(msg.pub_id, sub_id)] += 1
                self.delivered_at[(msg.pub_id, sub_id)] = broker
        for f in d.forwards:
            if f.hop not in algo.view.neighbours:
                raise AssertionError(f"{broker} forwarded to {f.hop}, which is not its neighbour")
            self.sent.append(Sent(broker, f.hop, f.msg))
            if isinstance(f.msg, Subscription | Unsubscription):
                ev = contract.SUB_OUT if isinstance(f.msg, Subscription) else contract.UNSUB_OUT
                self._log(broker, ev, f.msg.sub_id, f.hop)
            self._queue.append((broker, f.hop, f.msg))

    # --- inspecting --------------------------------------------------------------------

    def table_sizes(self) -> dict[str, int]:
        return {b: a.table_size() for b, a in self.brokers.items()}

    def sent_for(self, pub_id: str) -> list[Sent]:
        return [s for s in self.sent if isinstance(s.msg, Publication) and s.msg.pub_id == pub_id]
