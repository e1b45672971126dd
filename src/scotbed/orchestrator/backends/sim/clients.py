"""The workload's clients in virtual time: a generated plan's subscribers and publishers, or a script.

They write what the Locust users and the script session write (:mod:`scotbed.workloads.records`):
the client events and the workload files, so the analysis and the oracle read a simulated run as
any other. A client↔broker hop takes no time (docs/design.md §11): a publication enters its broker's
input when it is due, a subscription is acknowledged at the end of its service, and a delivery is
received at the end of the service that delivers it.

Sessions lost to a broker fault go as a Locust user's (:mod:`scotbed.workloads.users`): a subscriber's
streams break when its broker goes down, a publisher learns it from its next call (that publication is
logged as published, and lost); either logs ``session`` ``lost``, asks every ``SESSION_RETRY_S`` whether
the broker serves again, opens its streams there again (same sub_ids and filters, no new ``subscribe``
line) and logs ``restored``; what it was to do there meanwhile (overdue publications, churn) follows.
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
from scotbed.workloads.plan import SESSION_RETRY_S, Action, Plan, PublisherPlan, SubscriberPlan
from scotbed.workloads.quotes import QuoteSource
from scotbed.workloads.records import JsonlWriter, ProcessRecords
from scotbed.workloads.script import PUBLISHER, Op, Script

#: the event log of the simulated clients: ``events/locust-sim.jsonl`` (a workload process's name)
PROCESS = f"{contract.CLIENT_PROCESS_PREFIX}sim"
#: the script's clients' process, as :mod:`scotbed.workloads.script_runner` names it
SCRIPT_PROCESS = "script"
#: after a script line settles, the next starts this much later (a real settle's quiescence poll)
SETTLE_GAP_NS = 1_000_000
RETRY_NS = round(SESSION_RETRY_S * 1e9)
#: how a call to a broker that is down fails, in a ``session`` event's reason
UNAVAILABLE = "UNAVAILABLE: the broker is down"


class Clients:
    """Subscribe, unsubscribe and publish at a broker of ``net``, recording each as a client does."""

    def __init__(self, net: Network, records: ProcessRecords) -> None:
        self.net = net
        self.clock = net.clock
        self.records = records
        self.in_ns = round(net.cost.client_in_us * 1e3)  # a client→broker hop (calibration.HostCost)
        self.out_ns = round(net.cost.client_out_us * 1e3)  # a broker→subscriber hop
        self.held: dict[str, tuple[str, str, Filter]] = {}  # sub_id -> (subscriber, broker, filter)
        self.pending: dict[str, Callable[[], None]] = {}  # sub_id not acknowledged yet -> its call again
        self.reopening: dict[tuple[str, str], list[Callable[[], None]]] = {}  # (client, broker) -> waiting
        self.last_publish_ns: int | None = None

    def subscribe(
        self, subscriber: str, sub_id: str, flt: Filter, broker: str, then: Callable[[], None] | None = None
    ) -> None:
        """Open ``sub_id`` at ``broker``; ``then`` runs once the broker acknowledged it."""

        def again() -> None:
            self.subscribe(subscriber, sub_id, flt, broker, then)

        if self._waits(subscriber, broker, again, f"subscribe {sub_id}: {UNAVAILABLE}"):
            return
        sent = self.clock.now_ns
        self.held[sub_id] = (subscriber, broker, flt)
        self.pending[sub_id] = again

        def acked() -> None:
            self.pending.pop(sub_id, None)
            self.records.subscription(
                sent, contract.SUBSCRIBE, sub_id, subscriber, broker, flt, ack_ns=self.clock.now_ns
            )
            if then is not None:
                then()

        self._open(subscriber, sub_id, flt, broker, acked)

    def _open(
        self, subscriber: str, sub_id: str, flt: Filter, broker: str, acked: Callable[[], None]
    ) -> None:
        self.net.brokers[broker].sessions[sub_id] = self._receiver(subscriber, broker)
        self._to_broker(broker, Subscription(sub_id, flt, broker, origin_ns=self.clock.now_ns), acked)

    def unsubscribe(self, sub_id: str) -> None:
        subscriber, broker, flt = self.held[sub_id]
        if self._waits(
            subscriber, broker, lambda: self.unsubscribe(sub_id), f"unsubscribe {sub_id}: {UNAVAILABLE}"
        ):
            return
        del self.held[sub_id]
        now = self.clock.now_ns
        self.records.subscription(now, contract.UNSUBSCRIBE, sub_id, subscriber, broker, flt)
        self.net.brokers[broker].sessions.pop(sub_id, None)
        self._to_broker(broker, Unsubscription(sub_id, broker, origin_ns=now, filter=flt))

    def publish(
        self, publisher: str, pub_id: str, broker: str, attrs: Mapping[str, Any], due_ns: int
    ) -> None:
        """A notification due at ``due_ns``; at a broker that is down it is logged as published and lost
        (the call failed), and the next ones wait until the session is open again."""
        if (waiting := self.reopening.get((publisher, broker))) is not None:
            waiting.append(lambda: self.publish(publisher, pub_id, broker, attrs, due_ns))
            return
        now = self.last_publish_ns = self.clock.now_ns
        self.records.publication(now, due_ns, pub_id, publisher, broker, dict(attrs))
        if not self.net.serving(broker):
            self.lost(publisher, broker, f"publish to {broker}: {UNAVAILABLE}", subscriber=False)
            return
        pub = Publication(pub_id, publisher, dict(attrs), due_ns, now, source_broker=broker)
        self._to_broker(broker, pub)

    # --- sessions lost to a broker fault -------------------------------------------------------

    def broker_down(self, broker: str, why: str) -> None:
        """``broker`` went down: the streams its subscribers held there broke; a subscription not yet
        acknowledged is made again once the session is open (its call failed)."""
        for sub_id, (subscriber, b, _) in list(self.held.items()):
            if b != broker:
                continue
            self.lost(subscriber, broker, f"stream of {sub_id} at {broker} {why}")
            if sub_id in self.pending:
                del self.held[sub_id]
                self.reopening[(subscriber, broker)].append(self.pending.pop(sub_id))

    def _waits(self, client: str, broker: str, op: Callable[[], None], why: str) -> bool:
        """True when ``op`` waits for the client's session at ``broker`` to be open again (lost now, if the
        broker is down); it runs then."""
        if (client, broker) not in self.reopening and self.net.serving(broker):
            return False
        self.lost(client, broker, why)
        self.reopening[(client, broker)].append(op)
        return True

    def lost(self, client: str, broker: str, why: str, subscriber: bool = True) -> None:
        """The client's session at ``broker`` is lost (once until it is open again): asked again every
        ``SESSION_RETRY_S`` whether the broker serves."""
        if (client, broker) in self.reopening:
            return
        self.reopening[(client, broker)] = []
        self.records.event(
            self.clock.now_ns, client, contract.SESSION, state="lost", broker=broker, reason=why
        )
        self.clock.after(RETRY_NS, self._poll, client, broker, subscriber)

    def _poll(self, client: str, broker: str, subscriber: bool) -> None:
        if not self.net.serving(broker):
            self.clock.after(RETRY_NS, self._poll, client, broker, subscriber)
            return
        held = [(sid, flt) for sid, (c, b, flt) in self.held.items() if c == client and b == broker]
        self._reopen(client, broker, held, 0, subscriber)

    def _reopen(
        self, client: str, broker: str, held: list[tuple[str, Filter]], i: int, subscriber: bool
    ) -> None:
        """The streams held at ``broker`` opened again one after the other, each once the previous is
        acknowledged; then ``restored`` and what waited for the session."""
        if i < len(held):
            sub_id, flt = held[i]
            self._open(
                client, sub_id, flt, broker, lambda: self._reopen(client, broker, held, i + 1, subscriber)
            )
            return
        fields = {"subscriptions": len(held)} if subscriber else {}
        self.records.event(
            self.clock.now_ns, client, contract.SESSION, state="restored", broker=broker, **fields
        )
        for op in self.reopening.pop((client, broker)):
            op()

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
    spec's fault timeline, link and broker faults (``faults.jsonl`` records each when it happened, as
    the fault injector does)."""

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
        if self.faults:
            self.clock.at(t0 + round(self.faults[0].at_s * 1e9), self._fault, 0, t0)
        self.clock.run()

    def _fault(self, k: int, t0: int) -> None:
        """Fault ``k`` of the timeline; the next one at its time or, later, once this one is done (the
        injector applies them one after the other: a stop takes its drain)."""
        f, start = self.faults[k], self.clock.now_ns

        def done() -> None:
            self._record(f, start)
            if k + 1 < len(self.faults):
                self.clock.at(t0 + round(self.faults[k + 1].at_s * 1e9), self._fault, k + 1, t0)

        self._apply(f, done)

    def _apply(self, f: FaultSpec, done: Callable[[], None]) -> None:
        net, clients = self.clients.net, self.clients
        if f.action == "stop":
            net.stop(f.broker, done)
            clients.broker_down(f.broker, "ended by the broker")
            return
        if f.action == "kill":
            net.kill(f.broker)
            clients.broker_down(f.broker, f"broke: {UNAVAILABLE}")
        elif f.action == "restart":
            net.restart(f.broker)  # serving, its links up both ways, at once: the restart is done
        else:
            net.link_fault(f)
        done()

    def _record(self, f: FaultSpec, start_ns: int) -> None:
        """The action's line of ``faults.jsonl``, as the injector writes it once the action is done."""
        if self.faults_log is None:
            return
        target = f.broker if f.neighbour is None else f"{f.broker}<->{f.neighbour}"
        rec = {"action": f.action, "target": target, "at_s": f.at_s,
               "start_ns": start_ns, "end_ns": self.clock.now_ns}  # fmt: skip
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
