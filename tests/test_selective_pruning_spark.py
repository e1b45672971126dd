"""The burst metrics of :mod:`scotbed.analysis.pruning` on a hand-written event log with known answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scotbed.analysis import metrics as M
from scotbed.analysis import pruning
from scotbed.analysis.events import read_events

pytestmark = [pytest.mark.spark, pytest.mark.slow]

T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def E(ms: float, node: str, ev: str, **kw: Any) -> dict[str, Any]:
    return {"ts_ns": T0 + int(ms * MS), "node": node, "ev": ev, **kw}


def test_released_queues_and_probe_delay(spark: Any, tmp_path: Path) -> None:
    rows = [
        E(0, "b-s0-0", "sub_out", sub_id="r0", link="b-n0-0", hops=0),  # before the burst: not released
        E(50, "all0-0", "unsubscribe", sub_id="all0-0"),  # a monitor's move: not the burst's start
        E(100, "r0", "unsubscribe", sub_id="r0"),
        E(110, "b-s0-0", "sub_out", sub_id="r0c0", link="b-n0-0", hops=0),
        E(120, "b-n0-0", "sub_out", sub_id="r0c0", link="b-a-0", hops=1),
        E(130, "b-a-0", "sub_out", sub_id="r0c0", link="b-b-0", hops=2),
        E(140, "b-a-0", "sub_out", sub_id="r0c1", link="b-b-0", hops=2),
        E(150, "b-a-0", "sub_out", sub_id="all0-1", link="b-b-0", hops=2),  # a monitor moved: not released
        E(160, "b-b-0", "unsub_out", sub_id="r1", link="b-c-0", hops=3, packed=3),  # carries 3 released
        E(170, "b-b-0", "unsub_out", sub_id="r2", link="b-c-0", hops=3),  # carries none: not released
        E(180, "b-b-0", "sub_out", sub_id="r1c0", link="b-c-0", hops=3, packed=1),  # one message, 2 subs
        E(0, "b-a-0", "queue", link="", len=2, ce=0.0),
        E(0, "b-a-0", "queue", link="b-b-0", len=5, ce=0.0),
        E(0, "b-a-0", "queue", link="b-n0-0", len=1, ce=0.0),
        E(250, "b-b-0", "queue", link="", len=4, ce=0.0, peak=9),  # 9 between the samples
        E(250, "b-n0-0", "queue", link="", len=99, ce=0.0),  # not a core broker
        E(200, "script", "publish", pub_id="probe0", intended_ns=T0 + 200 * MS, sent_ns=T0 + 200 * MS),
        E(300, "script", "publish", pub_id="h0", intended_ns=T0 + 300 * MS, sent_ns=T0 + 300 * MS),
        E(230, "m0", "receive", pub_id="probe0", sub_id="m0", hops=3),
        E(260, "m1", "receive", pub_id="probe0", sub_id="m1", hops=3),
        E(900, "r0c0", "receive", pub_id="h0", sub_id="r0c0", hops=3),
    ]
    f = tmp_path / "events.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ev, _ = read_events(spark, [str(f)])
    since = pruning.first_unsubscribe_ns(M.subscription_facts(ev).toPandas())
    assert since == T0 + 100 * MS  # the monitor's move at 50 ms is not the burst's start
    released = pruning.released_per_broker(ev, since)
    assert dict(zip(released["node"], released["released"], strict=True)) == {
        "b-a-0": 2, "b-b-0": 2, "b-n0-0": 1, "b-s0-0": 1,
    }  # fmt: skip
    assert dict(zip(released["node"], released["subscriptions"], strict=True)) == {
        "b-a-0": 2, "b-b-0": 5, "b-n0-0": 1, "b-s0-0": 1,
    }  # fmt: skip
    q = pruning.core_queue_series(ev, ["b-a-0", "b-b-0"], since)
    got = q[["node", "t_s", "input_len", "max_output_len"]].values.tolist()
    assert got == [["b-a-0", -0.1, 2, 5], ["b-b-0", 0.15, 9, 0]]
    probe = pruning.probe_delay(M.deliveries(ev, M.publication_times(ev, None)))
    assert (probe["count"], probe["mean"], probe["max"]) == (2, 45.0, 60.0)


def test_the_longest_input_queue_is_the_peak_between_samples(spark: Any, tmp_path: Path) -> None:
    """A burst of 40 that came and went between two samples: ``max_input_len`` is 40, not the 3 sampled."""
    rows = [
        E(0, "b-e-0", "queue", link="", len=1, ce=0.0, peak=1),
        E(250, "b-e-0", "queue", link="", len=3, ce=0.0, peak=40),  # the burst, drained to 3 by the sample
        E(500, "b-e-0", "queue", link="", len=0, ce=0.0, peak=3),
        E(250, "b-e-0", "queue", link="b-d-0", len=6, ce=0.0),  # an output queue has no peak
        E(250, "b-d-0", "queue", link="", len=5, ce=0.0),  # a log without peak: its sampled length
    ]
    f = tmp_path / "events.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ev, _ = read_events(spark, [str(f)])
    facts = M.node_facts(ev)
    assert M.queue_maxima(facts) == {"max_output_len": 6, "max_input_len": 40}
    q = facts[facts["ev"] == "queue"]
    per_node = {str(n): int(v) for n, v in zip(q["node"], q["max_in_len"], strict=True)}
    assert per_node == {"b-e-0": 40, "b-d-0": 5}


@pytest.mark.parametrize("collect", [False, True], ids=["spark", "collected"])
def test_core_and_inner_publication_traffic_is_the_python_rule_on_the_same_log(
    spark: Any, tmp_path: Path, collect: bool
) -> None:
    """Fig. 7 (c): one publication's useful path E→D→C→n2→s4 and a kept tree's copies C→B→n1 that no
    subscriber below wants; the copies the core (and inner) brokers sent, and the false-positive share,
    as the plain-Python rule (:mod:`scotbed.analysis.forwarding`) counts them on the same copies."""
    from collections import Counter

    from scotbed import topology
    from scotbed.analysis.forwarding import false_positive_edges
    from scotbed.analysis.traffic import traffic_per_broker

    hops = [
        ("b-p0-0", "b-e-0"), ("b-e-0", "b-d-0"), ("b-d-0", "b-c-0"), ("b-c-0", "b-n2-0"),
        ("b-n2-0", "b-s4-0"), ("b-c-0", "b-b-0"), ("b-b-0", "b-n1-0"),
    ]  # fmt: skip
    rows = [E(i, s, "notif_out", pub_id="h0", link=d, hops=i) for i, (s, d) in enumerate(hops)]
    f = tmp_path / "events.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ev, _ = read_events(spark, [str(f)])
    interested = spark.createDataFrame([("h0", "b-s4-0")], "pub_id STRING, broker STRING")
    brokers = sorted({b for h in hops for b in h})
    _, fp = traffic_per_broker(ev, interested, brokers, collect)
    doc = topology.tree(topology.paper_tiered_small()).to_json()
    core, inner = pruning.core_brokers(doc), pruning.inner_brokers(doc)
    sent = Counter(s for s, _ in hops)
    wasted = Counter(s for s, _ in false_positive_edges(hops, ["b-s4-0"]))
    for group in (core, [*core, *inner]):
        copies = sum(sent[b] for b in group)
        want = {"copies": copies, "false_positive_share": sum(wasted[b] for b in group) / copies}
        assert pruning.publication_traffic(fp, group) == want
    assert pruning.publication_traffic(fp, core) == {"copies": 5, "false_positive_share": 0.4}


#: the released messages and subscriptions per sender of selective-path5's ``unsub R`` (lines 9-13):
#: active covering sends B and C on v1→v2→v3→v4 as 6 messages; packing packs both into the one
#: unsubscription per link, 3 messages carrying 6 subscriptions; selective pruning keeps R's tree and
#: releases nothing (tests/test_selective_pruning_real.py derives these by hand)
_HAND: dict[str, tuple[dict[str, int], dict[str, int]]] = {
    "covering-active": ({"b-v1-0": 2, "b-v2-0": 2, "b-v3-0": 2}, {"b-v1-0": 2, "b-v2-0": 2, "b-v3-0": 2}),
    "covering-packing": ({"b-v1-0": 1, "b-v2-0": 1, "b-v3-0": 1}, {"b-v1-0": 2, "b-v2-0": 2, "b-v3-0": 2}),
    "selective-pruning": ({}, {}),
}


def _released_by_hand(events: list[dict[str, Any]], since_ns: int) -> tuple[dict[str, int], dict[str, int]]:
    """Per sender, the messages from ``since_ns`` on that carry a subscription (a ``sub_out``, or any
    message with ``packed``) and the subscriptions they carry, read line by line from the logs."""
    from collections import Counter

    messages: Counter[str] = Counter()
    subscriptions: Counter[str] = Counter()
    for e in events:
        if e["ev"] not in ("sub_out", "unsub_out") or e["ts_ns"] < since_ns:
            continue
        carried = (e["ev"] == "sub_out") + e.get("packed", 0)
        if carried:
            messages[e["node"]] += 1
            subscriptions[e["node"]] += carried
    return dict(messages), dict(subscriptions)


@pytest.mark.parametrize("routing", [*_HAND, "covering-lazy"])
def test_released_messages_on_the_sim_backend_are_the_logs_counted_by_hand(
    spark: Any, routing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`scotbed run --backend sim` of selective-path5: per broker, the NRS messages and the subscriptions
    they carry are what a line-by-line count of the same logs gives and the hand-derived answer; under
    packing the count is the packed unsubscriptions (not 0), and lazy covering sends what active does."""
    from scotbed.orchestrator.run import RunOptions, run_spec

    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    options = RunOptions(backend="sim", out=tmp_path / "runs", quiet=True, analyse=False)
    spec = Path(__file__).parent.parent / "experiments" / "known-answer" / "selective-path5.yaml"
    run_dir = run_spec(spec, [f"routing={routing}"], options).run_dir
    files = sorted((run_dir / "events").glob("*.jsonl"))
    ev, _ = read_events(spark, [str(f) for f in files])
    since = pruning.first_unsubscribe_ns(M.subscription_facts(ev).toPandas())
    assert since is not None
    released = pruning.released_per_broker(ev, since)
    got = (
        dict(zip(released["node"], released["released"].astype(int), strict=True)),
        dict(zip(released["node"], released["subscriptions"].astype(int), strict=True)),
    )
    lines = [json.loads(x) for f in files for x in f.read_text().splitlines() if x.strip()]
    assert got == _released_by_hand(lines, since)
    assert got == _HAND.get(routing, _HAND["covering-active"])
