"""The topology manager: a task beside routing that reorganises an ``rpf`` tree at run time.

The decisions are :class:`scotbed.selforg.node.Node`'s (the heuristic, agreement and interest code
the simulator runs); this module is its I/O. Its messages are ``Control{kind: "topo.<kind>"}``
envelopes in the FIFO link streams (JSON in ``args["m"]``, the Bloom filter in ``data``); a
version the agreement committed is adopted through :class:`scotbed.broker.treeswap.TreeSwap`
(the END-wave swap) as soon as the previous one is finished here. Every decision is logged as a
``topo`` event with its inputs, every message sent as ``topo_out`` (the heuristic's overhead).

The broker's configuration block ``topology_manager`` carries the settings, the costs and the
initial tree over broker ids (:func:`settings_of`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scotbed.config import NeighbourConfig
from scotbed.contract import COST_REDRAW, TOPO, TOPO_OUT
from scotbed.selforg.costs import Costs, link_delay_ms
from scotbed.selforg.node import KINDS, Node, Out, Settings
from scotbed.selforg.records import Knobs
from scotbed.selforg.redraws import REDRAW, schedule_of
from scotbed.selforg.tree import Tree
from scotbed.topology import ACOL
from scotbed.v1 import scotbed_pb2 as pb

if TYPE_CHECKING:
    from scotbed.broker.runtime import Broker

log = logging.getLogger("scotbed.broker")

PREFIX = "topo."  # control kinds of the manager's messages
TICK_S = 0.01  # how often a committed version is checked for adoption and locks for release


def settings_of(block: Mapping[str, Any]) -> tuple[Settings, Costs, Tree]:
    """The ``topology_manager`` block: ``topology.self_organising`` keys, ``costs`` and ``tree``
    (links as [a, b]) over broker ids."""
    s = dict(block)
    knobs = Knobs(float(s.get("hysteresis", 0.0)), float(s.get("cooldown_ms", 0.0)) / 1000.0)
    extra = {k: int(s[k]) for k in ("cache_size", "bloom_bits", "bloom_hashes") if k in s}
    settings = Settings(
        str(s["heuristic"]), int(s.get("eta", 4)), float(s.get("period_ms", 1000.0)) / 1000.0, knobs, **extra
    )
    return settings, Costs.from_mapping(s.get("costs"), "topology_manager.costs"), Tree.of(s["tree"])


class TopologyManager:
    """The manager of one broker: receives ``topo.*`` controls, broadcasts, adopts versions."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.settings, self.costs, self.tree = settings_of(broker.cfg.topology_manager)
        self.node: Node | None = None
        self._task: asyncio.Task[None] | None = None
        self.sent = 0  # control messages sent (each also a ``topo_out`` event)
        self.schedule = schedule_of(broker.cfg.topology_manager)
        self.ms_per_cost = float(broker.cfg.topology_manager.get("latency_ms_per_cost", 0.0))
        self.started = 0.0

    def start(self, address: str) -> None:
        """Begin once this broker's own address is known (it goes into its broadcasts)."""
        cfg = self.broker.cfg
        peer = {"address": address, "type": cfg.type, "cluster": cfg.cluster, "region": cfg.region}
        self.node = Node(cfg.id, self.tree, self.costs, self.settings, peer, random.Random(cfg.id))
        self.started = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="topology")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def cached(self, pub_id: str) -> None:
        """A notification this broker's clients published or consumed."""
        if self.node is not None:
            self.node.cache.add(pub_id, time.monotonic())

    @staticmethod
    def owns(control: pb.Control) -> bool:
        return control.kind.startswith(PREFIX) and control.kind[len(PREFIX) :] in (*KINDS, REDRAW)

    def receive(self, peer: str, control: pb.Control) -> None:
        node = self.node
        if node is None:
            self.broker.drop(peer, "topology_manager_not_started", kind=control.kind)
            return
        kind, now = control.kind[len(PREFIX) :], time.monotonic()
        try:
            f = json.loads(control.args["m"])
            if kind == REDRAW:
                self._switch(int(f["index"]), peer)
                return
            outs = node.receive(now, kind, peer, f, control.data)
        except Exception as e:  # a bad message must not stop the link stream; logged, never silent
            self.broker.counters["errors"] += 1
            log.exception("%s: topology manager failed on %s", self.broker.id, kind)
            self.broker.drop(peer, f"error: {type(e).__name__}: {e}", kind=control.kind)
            return
        self._send(outs)
        self._adopt()

    # --- the periodic task ------------------------------------------------------------------------

    async def _run(self) -> None:
        node = self.node
        assert node is not None
        due = time.monotonic() + node.rng.uniform(0, self.settings.period)
        while True:
            await asyncio.sleep(TICK_S)
            now = time.monotonic()
            self._adopt()
            node.release(now, self.broker.swap.finished)
            self._delays()
            if node.me == node.sequencer:
                self._switch(self.schedule.due(now - self.started), None)
            if now >= due:
                self._send(node.broadcast())
                due = now + node.next_period()

    def _adopt(self) -> None:
        """Adopt the next committed version once the tree swap has finished the one before."""
        node, swap = self.node, self.broker.swap
        assert node is not None
        while swap.ready() and (a := node.adoption()) is not None:
            up = [
                NeighbourConfig(n, ACOL, p["type"], int(p["cluster"]), p["region"], p["address"])
                for n, p in a.up.items()
            ]
            swap.relink(up, a.down, a.next_hop, a.version)
            self._send(node.adopted())
            if self.schedule.index:  # a broker the flood missed during the swap learns it here
                self._send([Out(n, REDRAW, {"index": self.schedule.index}) for n in sorted(a.up)])

    def _delays(self) -> None:
        """Cost-derived latency: every open link's delay from the costs in force (new links too)."""
        if not self.ms_per_cost:
            return
        for n, link in self.broker.links.items():
            ms = link_delay_ms(self.schedule.costs.link(self.broker.id, n), self.ms_per_cost)
            if link.latency != (ms, 0.0):
                link.set_latency(ms, 0.0)  # reaches the line of a link already connected

    def _switch(self, index: int, came: str | None) -> None:
        """Cost table ``index`` (newer than mine) is in force: log it and flood it over the tree."""
        node = self.node
        assert node is not None
        if not self.schedule.learn(index):
            return
        node.costs = self.schedule.costs
        self.broker.events.emit(COST_REDRAW, n=index)
        self._send([Out(n, REDRAW, {"index": index}) for n in sorted(node.neighbours() - {came})])

    # --- output ---------------------------------------------------------------------------------------

    def _send(self, outs: list[Out]) -> None:
        b = self.broker
        for o in outs:
            link = b.links.get(o.to)
            if link is None:
                b.drop(o.to, "not_a_neighbour", kind=PREFIX + o.kind)
                continue
            ctl = pb.Control(kind=PREFIX + o.kind, args={"m": json.dumps(o.fields)}, data=o.data)
            env = pb.Envelope(control=ctl)
            size = env.ByteSize()
            link.queue.append((env, size))
            link.wake.set()
            self.sent += 1  # not a broker counter: the quiescence barrier ignores the manager's chatter
            b.events.emit(TOPO_OUT, kind=o.kind, link=o.to, size=size)
        self._records()

    def _records(self) -> None:
        node = self.node
        assert node is not None
        for d in node.records:
            self.broker.events.emit(
                TOPO,
                phase=d.kind,
                outcome=d.outcome,
                reason=d.reason,
                heuristic=d.heuristic,
                inputs=json.dumps(d.inputs, sort_keys=True),
            )
        node.records.clear()
