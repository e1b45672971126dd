"""The oracle's soundness on the in-process simulator's runs (the real routing plug-ins, no network).

A run is a sequence of subscribes, unsubscribes and publications, each finished before the next (the
simulator delivers every message at once), so no publication is in transition and every receive the
routing made is expected. The oracle reads the run as it reads a real one: the workload's
subscription lines, the brokers' subscription traffic as they log it (``SimNetwork.log``), the
publications and the receives; it must then report exactly the receives deleted as missing and the
copies added as duplicates. Covering routing re-forwards held-back subscriptions when their coverer
leaves: a re-forward must not excuse a settled subscription, and the propagation trace must end each
subscription's wave exactly where its subscribe's propagation ended, for every plug-in.

Budget: ``max(300, SCOTBED_FUZZ_EXAMPLES)`` examples (300 in ``make test``, ``make fuzz`` many more).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest
from fuzzing import EXAMPLES, FUZZ
from hypothesis import given, settings
from hypothesis import strategies as st

from scotbed import contract, routing, topology
from scotbed.analysis import oracle, propagation
from scotbed.broker.sim import SimNetwork
from scotbed.filters import Filter
from scotbed.topology import Scot

pytestmark = pytest.mark.fuzz

ORACLE_EXAMPLES = max(300, EXAMPLES)
ATTRS = ("a", "b")


@dataclass
class SimRun:
    """A simulator run recorded as the workload and the clients record a real one."""

    net: SimNetwork
    ops: list[dict[str, Any]] = field(default_factory=list)
    pubs: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)  # (pub_id, ns, attrs)
    #: sub_id -> when its own subscribe's propagation had first reached each broker it reached
    settled: dict[str, int] = field(default_factory=dict)

    def subscribe(self, sub_id: str, broker: str, text: str) -> None:
        flt = Filter.parse(text)
        op = {"op": "subscribe", "sub_id": sub_id, "subscriber": f"c-{sub_id}", "broker": broker}
        self.ops.append({**op, "ts_ns": self.net.tick(), "filter": flt.to_json()})
        before = len(self.net.log)
        self.net.subscribe(sub_id, broker, flt)
        first: dict[str, int] = {}
        for ts, node, ev, sid, _ in self.net.log[before:]:
            if ev == contract.SUB_IN and sid == sub_id:
                first.setdefault(node, ts)
        self.settled[sub_id] = max(first.values())

    def unsubscribe(self, sub_id: str) -> None:
        broker = self.net.host[sub_id]
        op = {"op": "unsubscribe", "sub_id": sub_id, "subscriber": f"c-{sub_id}", "broker": broker}
        self.ops.append({**op, "ts_ns": self.net.tick()})
        self.net.unsubscribe(sub_id)

    def publish(self, pub_id: str, broker: str, attrs: dict[str, Any]) -> None:
        self.pubs.append((pub_id, self.net.tick(), attrs))
        self.net.publish(pub_id, broker, attrs)

    def check(self, receives: Counter[tuple[str, str]]) -> tuple[dict[str, Any], pa.Table]:
        """The oracle's result and offenders for these receives ((pub_id, sub_id) -> copies)."""
        eps = oracle.episodes_of_logs(self.ops, self.net.log)
        ids, times, attrs = zip(*self.pubs, strict=True) if self.pubs else ((), (), ())
        pubs = pa.RecordBatch.from_pydict(
            {
                "pub_id": pa.array(ids, pa.string()),
                "intended": pa.array(times, pa.int64()),
                "sent": pa.array(times, pa.int64()),
                "attrs": pa.array([json.dumps(a) for a in attrs], pa.string()),
            }
        )
        pairs = list(receives.elements())
        received = pa.table(
            {
                "pub_id": pa.array([p for p, _ in pairs], pa.string()),
                "sub_id": pa.array([s for _, s in pairs], pa.string()),
                "recv_ns": pa.array([self.net.clock + 1] * len(pairs), pa.int64()),
            }
        )
        return oracle.check_rows(eps, pubs, received, first_n=10**6)


def flagged(offenders: pa.Table, flag: str) -> set[tuple[str, str]]:
    return {(r["pub_id"], r["sub_id"]) for r in offenders.filter(offenders[flag]).to_pylist()}


def test_a_reforward_does_not_excuse_a_settled_subscription() -> None:
    """covering-active on the path v0 - v1 - v2: T (a < 2) at v0 is held back under S (a < 5), which
    v0 sent on first; S's unsubscription at the end re-forwards T to v1 and v2. T settled at v0 when it
    subscribed: with its receives deleted, each of its publications is missing."""
    run = SimRun(SimNetwork(Scot(topology.path(3), 1), "covering-active"))
    v0, _, v2 = (b.id for b in run.net.scot.brokers)
    run.subscribe("S", v0, "a < 5")
    run.subscribe("T", v0, "a < 2")
    sent_before = len(run.net.sent)
    for k in range(6):
        run.publish(f"p{k}", v2, {"a": k})
    run.unsubscribe("S")
    reforwards = [s for s in run.net.sent[sent_before:] if s.kind == "subscription" and s.msg.sub_id == "T"]
    assert len(reforwards) == 2  # v0 → v1 → v2: the re-forward the oracle must not take as settling
    got = Counter(run.net.deliveries)
    result, _ = run.check(got)
    assert result["ok"] and result["in_transition"] == 0 and result["expected_deliveries"] == 5 + 2
    without_t = Counter({pair: n for pair, n in got.items() if pair[1] != "T"})
    result, offenders = run.check(without_t)
    assert (result["ok"], result["missing"], result["in_transition"]) == (False, 2, 0)
    assert flagged(offenders, "missing") == {("p0", "T"), ("p1", "T")}


# --- the property ----------------------------------------------------------------------------------


def applicable(m: int) -> list[str]:
    """The routing plug-ins a SCOT with connectivity ``m`` runs (as the spec's checks decide)."""
    names = []
    for name in routing.implemented():
        algo = routing.algorithm_class(name)
        if (m == 1 and not algo.requires_clusters) or (m > 1 and not algo.requires_acyclic):
            names.append(name)
    return names


@st.composite
def filters(draw: st.DrawFn) -> str:
    """Small conjunctions over two attributes with small domains: covering relations are frequent."""
    preds = []
    for attr in draw(st.lists(st.sampled_from(ATTRS), min_size=1, max_size=2, unique=True)):
        op = draw(st.sampled_from(["=", "<", ">=", "!=", "exists"]))
        preds.append(f"{attr} exists" if op == "exists" else f"{attr} {op} {draw(st.integers(0, 3))}")
    return " and ".join(preds)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Scot, list[tuple[Any, ...]]]:
    """An overlay and a sequence of operations: ("sub", broker, filter), ("unsub", k-th active
    subscription), ("pub", broker, attrs)."""
    n = draw(st.integers(1, 5))
    scot = Scot(topology.random_tree(n, draw(st.integers(0, 10**6))), draw(st.sampled_from([1, 1, 2])))
    brokers = st.integers(0, len(scot.brokers) - 1)
    attrs = st.dictionaries(st.sampled_from(ATTRS), st.integers(0, 3), max_size=2)
    op = st.one_of(
        st.tuples(st.just("sub"), brokers, filters()),
        st.tuples(st.just("unsub"), st.integers(0, 10)),
        st.tuples(st.just("pub"), brokers, attrs),
    )
    return scot, draw(st.lists(op, min_size=1, max_size=14))


def play(scot: Scot, name: str, ops: list[tuple[Any, ...]]) -> SimRun:
    run = SimRun(SimNetwork(scot, name))
    ids = [b.id for b in scot.brokers]
    active: list[str] = []
    for k, op in enumerate(ops):
        if op[0] == "sub":
            run.subscribe(f"s{k}", ids[op[1]], op[2])
            active.append(f"s{k}")
        elif op[0] == "unsub" and active:
            run.unsubscribe(active.pop(op[1] % len(active)))
        elif op[0] == "pub":
            run.publish(f"p{k}", ids[op[1]], op[2])
    return run


@settings(FUZZ, max_examples=ORACLE_EXAMPLES)
@given(scenarios(), st.randoms(use_true_random=False))
def test_the_oracle_reports_exactly_the_deleted_and_duplicated_receives(
    scenario: tuple[Scot, list[tuple[Any, ...]]], rnd: Any
) -> None:
    scot, ops = scenario
    for name in applicable(scot.m):
        run = play(scot, name, ops)
        # each wave ends when its subscribe's propagation first reached every broker: not cut short,
        # not reopened
        waves = propagation.wave_ends(run.net.log)
        assert {s: ends[-1] for s, ends in waves.items()} == run.settled, name
        got = Counter(run.net.deliveries)
        result, _ = run.check(got)
        assert result["ok"], (name, result)
        assert (result["in_transition"], result["delivered"]) == (0, result["expected_deliveries"]), name
        pairs = sorted(got)
        deleted = set(rnd.sample(pairs, rnd.randint(0, len(pairs))))
        doubled = set(rnd.sample(pairs, rnd.randint(0, len(pairs)))) - deleted
        receives = Counter({p: n + (p in doubled) for p, n in got.items() if p not in deleted})
        result, offenders = run.check(receives)
        assert (result["missing"], result["duplicates"], result["false_positives"]) == (
            len(deleted),
            len(doubled),
            0,
        ), name
        assert flagged(offenders, "missing") == deleted, name
        assert flagged(offenders, "duplicate") == doubled, name
        assert result["ok"] == (not deleted and not doubled), name
