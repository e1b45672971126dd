"""The workload's clients in virtual time: a generated plan's subscribers and publishers, or a script.

They write what the Locust users and the script session write (:mod:`scotbed.workloads.records`):
the client events and the workload files, so the analysis and the oracle read a simulated run as
any other. A client↔broker hop takes no time (docs/design.md §11): a publication enters its broker's
input when it is due, a subscription is acknowledged at the end of its service, and a delivery is
received at the end of the service that delivers it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.experiment.spec_faults import FaultSpec
from scotbed.filters import Filter
from scotbed.messages import Message, Publication, Subscription, Unsubscription
from scotbed.orchestrator.backends.sim.network import Network
from scotbed.workloads.plan import Action, Plan, PublisherPlan, SubscriberPlan
from scotbed.workloads.quotes import QuoteSource
from scotbed.workloads.records import JsonlWriter, ProcessRecords
from scotbed.workloads.script import PUBLISHER, Op, Script

#: the event log of the simulated clients: ``events/locust-sim.jsonl`` (a workload process's name)
PROCESS = f"{contract.CLIENT_PROCESS_PREFIX}sim"
#: the script's clients' process, as :mod:`scotbed.workloads.script_runner` names it
SCRIPT_PROCESS = "script"
#: after a script line settles, the next starts this much later (a real settle's quiescence poll)
SETTLE_GAP_NS = 1_000_000


class Clients:
    """Subscribe, unsubscribe and publish at a broker of ``net``, recording each as a client does."""

    def __init__(self, net: Network, records: ProcessRecords) -> None:
        self.net = net
        self.clock = net.clock
        self.records = records
        self.in_ns = round(net.cost.client_in_us * 1e3)  # a client→broker hop (calibration.HostCost)
        self.out_ns = round(net.cost.client_out_us * 1e3)  # a broker→subscriber hop
        self.held: dict[str, tuple[str, str, Filter]] = {}  # sub_id -> (subscriber, broker, filter)
        self.last_publish_ns: int | None = None

    def subscribe(
        self, subscriber: str, sub_id: str, flt: Filter, broker: str, then: Callable[[], None] | None = None
    ) -> None:
        """Open ``sub_id`` at ``broker``; ``then`` runs once the broker acknowledged it."""
        sent = self.clock.now_ns
        b = self.net.brokers[broker]
        b.sessions[sub_id] = self._receiver(subscriber, broker)
        self.held[sub_id] = (subscriber, broker, flt)

        def acked() -> None:
            self.records.subscription(
                sent, contract.SUBSCRIBE, sub_id, subscriber, broker, flt, ack_ns=self.clock.now_ns
            )
            if then is not None:
                then()

        self._to_broker(broker, Subscription(sub_id, flt, broker, origin_ns=sent), acked)

    def unsubscribe(self, sub_id: str) -> None:
        subscriber, broker, flt = self.held.pop(sub_id)
        now = self.clock.now_ns
        self.records.subscription(now, contract.UNSUBSCRIBE, sub_id, subscriber, broker, flt)
        self.net.brokers[broker].sessions.pop(sub_id, None)
        self._to_broker(broker, Unsubscription(sub_id, broker, origin_ns=now, filter=flt))

    def publish(
        self, publisher: str, pub_id: str, broker: str, attrs: Mapping[str, Any], due_ns: int
    ) -> None:
        now = self.last_publish_ns = self.clock.now_ns
        self.records.publication(now, due_ns, pub_id, publisher, broker, dict(attrs))
        pub = Publication(pub_id, publisher, dict(attrs), due_ns, now, source_broker=broker)
        self._to_broker(broker, pub)

    def _to_broker(self, broker: str, msg: Message, done: Callable[[], None] | None = None) -> None:
        submit = self.net.brokers[broker].submit
        if self.in_ns:
            self.clock.after(self.in_ns, submit, None, msg, done)
        else:
            submit(None, msg, done)

    def _receiver(self, subscriber: str, broker: str) -> Callable[[str, Publication, int], None]:
        def received(sub_id: str, pub: Publication, broker_ns: int) -> None:
            self.records.receive(
                self.clock.now_ns, subscriber, pub.pub_id, sub_id, pub.hops, broker_ns, broker
            )

        def receive(sub_id: str, pub: Publication, broker_ns: int) -> None:
            if self.out_ns:
                self.clock.after(self.out_ns, received, sub_id, pub, broker_ns)
            else:
                received(sub_id, pub, broker_ns)

        return receive


class PlanDriver:
    """A generated workload plan: initial subscriptions, release once quiet, publishers, churn and the
    spec's link faults (``faults.jsonl`` records each when it happened, as the fault injector does)."""

    def __init__(
        self, plan: Plan, clients: Clients, faults: Sequence[FaultSpec] = (), faults_log: Path | None = None
    ) -> None:
        self.plan = plan
        self.clients = clients
        self.clock = clients.clock
        self.owner = {a.sub_id: s.name for s in plan.subscribers for a in s.actions}
        self.faults = sorted(faults, key=lambda f: f.at_s)
        self.faults_log = faults_log

    def run(self) -> None:
        """Play the whole plan, to the last event."""
        for sp in self.plan.subscribers:
            self._subscribe_from(sp, 0)
        self.clock.run()  # every initial subscription settled: the brokers are quiescent
        t0 = self.clock.now_ns + round(self.plan.release.settle_s * 1e9)
        sources = self.plan.sources()
        for pp in self.plan.publishers:
            self._schedule_publisher(pp, sources[pp.name], t0)
        for sp in self.plan.subscribers:
            for a in sp.actions:
                self.clock.at(t0 + round(a.at_s * 1e9), self._act, a)
        for f in self.faults:
            self.clock.at(t0 + round(f.at_s * 1e9), self._fault, f)
        self.clock.run()

    def _fault(self, f: FaultSpec) -> None:
        self.clients.net.link_fault(f)
        if self.faults_log is not None:
            now = self.clock.now_ns
            rec = {"action": f.action, "target": f"{f.broker}<->{f.neighbour}", "at_s": f.at_s,
                   "start_ns": now, "end_ns": now}  # fmt: skip
            with self.faults_log.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")

    def _subscribe_from(self, sp: SubscriberPlan, i: int) -> None:
        """A subscriber's initial subscriptions one after the other, each once the last was acknowledged."""
        if i < len(sp.subscriptions):
            sub_id, flt = sp.subscriptions[i]
            self.clients.subscribe(sp.name, sub_id, flt, sp.broker, lambda: self._subscribe_from(sp, i + 1))

    def _schedule_publisher(self, pp: PublisherPlan, source: QuoteSource, t0: int) -> None:
        quotes = source.stream(pp.seed)

        def publish(k: int) -> None:
            due = t0 + pp.intended_offset_ns(k)
            self.clients.publish(pp.name, f"pub-{pp.name}-{k}", pp.broker, next(quotes), due)
            if k + 1 < pp.count:
                self.clock.at(t0 + pp.intended_offset_ns(k + 1), publish, k + 1)

        if pp.count:
            self.clock.at(t0 + pp.intended_offset_ns(0), publish, 0)

    def _act(self, a: Action) -> None:
        if a.op == "subscribe":
            assert a.filter is not None
            self.clients.subscribe(self.owner[a.sub_id], a.sub_id, a.filter, a.broker)
        else:
            self.clients.unsubscribe(a.sub_id)


class ScriptDriver:
    """A scripted scenario (docs/design.md §8): every line in file order, each settled unless it says not,
    with the script session's ``workload/script_ops.jsonl``."""

    def __init__(self, script: Script, clients: Clients, run_dir: Path) -> None:
        self.script = script
        self.clients = clients
        self.clock = clients.clock
        self.ops_log = JsonlWriter(run_dir / contract.SCRIPT_OPS)

    def run(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        last: dict[str, Any] | None = None
        for op in self.script.ops:
            start = self.clock.now_ns
            self._one(op)
            if op.op != "sleep":
                counts[op.op] = counts.get(op.op, 0) + 1
            if op.settles:
                self._settle()
            if last is not None:
                self.ops_log.write(last)
            last = {"line": op.line, "op": op.op, "id": op.sub_id or op.pub_id, "broker": op.broker,
                    "start_ns": start, "end_ns": self.clock.now_ns}  # fmt: skip
        self._settle()
        if last is not None:
            self.ops_log.write({**last, "end_ns": self.clock.now_ns})
        self.ops_log.close()
        return counts

    def _settle(self) -> None:
        self.clock.run()
        self.clock.run(until_ns=self.clock.now_ns + SETTLE_GAP_NS)

    def _one(self, op: Op) -> None:
        c = self.clients
        if op.op == contract.SUBSCRIBE:
            assert op.filter is not None
            c.subscribe(op.sub_id, op.sub_id, op.filter, op.broker)
        elif op.op == contract.UNSUBSCRIBE:
            c.unsubscribe(op.sub_id)
        elif op.op == contract.PUBLISH:
            c.publish(PUBLISHER, op.pub_id, op.broker, op.attrs, self.clock.now_ns)
        elif op.op == "sleep":
            self.clock.run(until_ns=self.clock.now_ns + round(op.ms * 1e6))
