"""The broker core without the network: CE, token bucket, acks, event log, decision execution."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
import urllib.request
from pathlib import Path

from scotbed import topology
from scotbed.broker.envelopes import delivery, encode
from scotbed.broker.eventlog import EventLog, read_events
from scotbed.broker.linkout import CeWindow, LinkOut
from scotbed.broker.runtime import Broker
from scotbed.broker.sessions import SessionRefused
from scotbed.config import BrokerConfig, CongestionConfig, LogConfig, NeighbourConfig, build_configs
from scotbed.filters import Filter
from scotbed.messages import Publication, Subscription, SubState
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.wire import envelope, from_envelope

NB = NeighbourConfig("b-v1-0", "aCOL", "edge", 0, "v1", "127.0.0.1:1")


def test_ce_is_in_over_out_and_in_when_nothing_went_out() -> None:
    now = [0.0]
    window = CeWindow(0.05, clock=lambda: now[0])
    window.count_in(10)
    window.count_out(5)
    assert window.ce == 0.0  # the first window is still open
    now[0] = 0.06
    assert window.ce == 2.0
    window.count_in(3)
    now[0] = 0.10
    assert window.ce == 3.0  # the window [0.05, 0.10) closed with 3 in, nothing out
    window.count_out(4)
    now[0] = 0.16  # [0.10, 0.15) had 4 out and nothing in
    assert window.ce == 0.0
    window.count_in(7)
    now[0] = 0.31  # [0.15, 0.20) had 7 in, then empty windows: the last closed one is empty
    assert window.ce == 0.0


def test_link_ce_is_its_windows() -> None:
    now = [0.0]
    link = LinkOut(NB, 0.0, 10, 0.05)
    assert link.window.window_s == 0.05
    link.window = CeWindow(0.05, clock=lambda: now[0])
    link.window.count_in(4)
    link.window.count_out(2)
    now[0] = 0.07
    assert link.ce == 2.0


def test_token_bucket_refills_at_capacity_up_to_a_10ms_burst() -> None:
    link = LinkOut(NB, 1000.0, 10, 0.05)
    assert link.burst == 10.0 and link.tokens == 0.0
    time.sleep(0.003)
    assert 2.0 <= link.refill() <= 10.0
    time.sleep(0.05)
    assert link.refill() == 10.0
    link.set_capacity(0)
    assert link.capacity == 0 and link.burst == 1.0


def test_acks_are_cumulative() -> None:
    link = LinkOut(NB, 0.0, 10, 0.05)
    for seq in (1, 2, 3):
        link.unacked[seq] = pb.Batch(seq=seq, envelopes=[pb.Envelope()] * seq)
    link.unacked_envelopes = 6
    assert link.acked(2) == 3
    assert list(link.unacked) == [3] and link.unacked_envelopes == 3
    assert link.acked(2) == 0


def test_a_restarted_neighbour_is_seen_once_whichever_direction_learns_it_first() -> None:
    """The hello (receiver) and the hello's ack (sender) both name the neighbour's process; only the
    first sighting of a new process after another is a restart, so its log is replayed once."""
    link = LinkOut(NB, 0.0, 10, 0.05)
    assert not link.peer_is("")  # an ack without an incarnation tells nothing
    assert not link.peer_is("p1")  # the first process: nothing to replay
    assert not link.peer_is("p1")  # the other direction's hello of the same process
    assert link.peer_is("p2")  # restarted: replay
    assert not link.peer_is("p2")  # learnt again from the other direction: not a second replay
    assert link.peer_is("p3") and link.peer_process == "p3"


def test_event_log_lines_parse_with_node_ts_and_fields(tmp_path: Path) -> None:
    for name in ("b.jsonl", "b.jsonl.gz"):
        path = tmp_path / name
        log = EventLog('b-%s-"0"', str(path), buffer_events=2)
        log.emit("sub_in", sub_id='s"1\u00e9', link="")
        assert log.pending == 1
        log.emit("queue", link="b-x-0", len=3, ce=1.5)
        assert log.pending == 0  # the buffer limit forced a write
        log.emit("table", size=7)
        log.close()
        events = read_events(path)
        assert [e["ev"] for e in events] == ["sub_in", "queue", "table"]
        assert events[0]["sub_id"] == 's"1\u00e9' and events[0]["node"] == 'b-%s-"0"'
        assert events[1] == {**events[1], "link": "b-x-0", "len": 3, "ce": 1.5}
        assert all(isinstance(e["ts_ns"], int) for e in events)
    with gzip.open(tmp_path / "b.jsonl.gz", "rt") as fh:
        assert len([json.loads(line) for line in fh]) == 3


def test_event_log_lines_are_the_json_of_their_fields(tmp_path: Path) -> None:
    """Each line is, byte for byte, the compact JSON of ``ts_ns``, ``node``, ``ev`` and the fields (what
    the analysis and the oracle parse), whatever the scalar: quotes, controls and non-ASCII text, floats
    of any size, NaN, booleans, None, an int subclass."""
    fields = {
        "pub_id": 'p"\\\n\u00e9\u2028\x01',
        "hops": 3,
        "big": 2**70,
        "us": 12.5,
        "tiny": 1e-7,
        "huge": 1e22,
        "nan": float("nan"),
        "dynamic": False,
        "ok": True,
        "none": None,
        "kind": SubState.SECONDARY,
    }
    path = tmp_path / "b.jsonl"
    log = EventLog("b\u00e9", str(path))
    log.emit_at(17, "notif_out", **fields)
    log.close()
    expected = json.dumps(
        {"ts_ns": 17, "node": "b\u00e9", "ev": "notif_out", **fields},
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert path.read_text(encoding="utf-8") == expected + "\n"


def _broker(tmp_path: Path, routing: str, matching: str = "counting") -> Broker:
    scot = topology.tree(topology.path(3))
    cfgs = build_configs(
        scot,
        {b.id: f"127.0.0.1:{k + 1}" for k, b in enumerate(scot.brokers)},
        routing=routing,
        matching=matching,
        congestion=CongestionConfig(window_ms=50, ce_threshold=1.0, queue_threshold=1),
        log=LogConfig(path=str(tmp_path / "events.jsonl")),
    )
    cfg: BrokerConfig = cfgs[1]  # the middle broker b-v1-0, neighbours b-v0-0 and b-v2-0
    return Broker(cfg)


def test_decisions_are_executed_into_output_queues_sessions_and_events(tmp_path: Path) -> None:
    async def scenario() -> None:
        b = _broker(tmp_path, "rpf")
        session = b.open_session(Subscription("local", Filter.parse("price > 10"), b.id), "c1")
        b.handle(b.input.get_nowait())
        assert session.accepted.done()
        assert [len(b.links[n].queue) for n in ("b-v0-0", "b-v2-0")] == [1, 1]
        b.handle(("b-v2-0", Subscription("remote", Filter.parse("price > 50"), "b-v2-0", hops=1), None))
        assert len(b.links["b-v0-0"].queue) == 2 and len(b.links["b-v2-0"].queue) == 1
        b.handle(("b-v0-0", Publication("p1", "pub", {"price": 60}, hops=1), None))
        ev = await session.next_batch()
        assert ev is not None and [(d.notification.pub_id, d.hops) for d in ev.deliveries.items] == [
            ("p1", 1)
        ]
        out, size = b.links["b-v2-0"].queue[-1]
        assert out.notification.notification.attrs["price"].i == 60 and size == out.ByteSize()
        assert b.link_state("b-v2-0").overloaded  # queue_threshold 1, two envelopes waiting
        assert dict(b.counters) == {
            "client_sub": 1,
            "sub_in": 1,
            "sub_out": 3,
            "notif_in": 1,
            "notif_out": 1,
            "match": 1,
            "deliver": 1,
        }
        b.events.close()
        kinds = [(e["ev"], e.get("link")) for e in read_events(tmp_path / "events.jsonl")]
        assert kinds == [
            ("sub_in", ""),
            ("sub_out", "b-v0-0"),
            ("sub_out", "b-v2-0"),
            ("sub_in", "b-v2-0"),
            ("sub_out", "b-v0-0"),
            ("notif_in", "b-v0-0"),
            ("match", None),
            ("deliver", None),
            ("notif_out", "b-v2-0"),
        ]

    asyncio.run(scenario())


def test_the_log_is_written_a_flush_interval_after_a_line_waits_and_samples_at_once(tmp_path: Path) -> None:
    """The flusher sleeps while nothing waits (no idle wake-ups) but still writes within its period."""

    async def scenario() -> None:
        b = _broker(tmp_path, "rpf")
        path = tmp_path / "events.jsonl"
        flusher = asyncio.create_task(b._flusher())
        await asyncio.sleep(0.05)
        b.events.emit("drop", link="", reason="test")
        assert b.events.pending == 1
        period = b.cfg.log.flush_interval_ms / 1000.0
        await asyncio.sleep(period + 0.3)
        assert b.events.pending == 0 and [e["ev"] for e in read_events(path)] == ["drop"]
        b.sample()  # nothing else waited: the samples are written now, the flusher stays asleep
        assert b.events.pending == 0 and not b._log_pending.is_set()
        assert [e["ev"] for e in read_events(path)][1:] == ["queue", "queue", "queue", "table", "loop"]
        flusher.cancel()
        b.events.close()

    asyncio.run(scenario())


def test_status_reports_the_worst_loop_lag_of_the_last_loop_sample(tmp_path: Path) -> None:
    """The live progress line reads the lag from Admin.Status: the figure of the latest ``loop`` event."""

    async def scenario() -> None:
        b = _broker(tmp_path, "rpf")
        assert b.status().loop_lag_ms_max == 0.0  # nothing sampled yet
        b.loop_probe.record(0.042)
        b.loop_probe.record(0.007)
        assert b.status().loop_lag_ms_max == 0.0  # the period in progress is not a figure yet
        b.sample()
        [loop] = [e for e in read_events(tmp_path / "events.jsonl") if e["ev"] == "loop"]
        assert b.status().loop_lag_ms_max == loop["lag_ms_max"] == 42.0
        b.sample()  # the next period saw no late wake-up
        assert b.status().loop_lag_ms_max == 0.0
        b.events.close()

    asyncio.run(scenario())


def test_match_events_carry_pst_matching_steps(tmp_path: Path) -> None:
    async def scenario() -> None:
        b = _broker(tmp_path, "rpf", matching="pst")
        for i in range(40):  # enough changes for the PST to choose its attribute order
            flt = Filter.parse(f'sym = "S{i}" and price > 5')
            b.handle(("b-v2-0", Subscription(f"s{i}", flt, "b-v2-0"), None))
        b.handle(("b-v0-0", Publication("p1", "pub", {"sym": "S7", "price": 6}, hops=1), None))
        b.events.close()
        (match,) = [e for e in read_events(tmp_path / "events.jsonl") if e["ev"] == "match"]
        assert match["n"] == 1 and match["steps"] == 2  # the root and its sym = "S7" child

    asyncio.run(scenario())


def test_a_failing_plug_in_is_logged_as_a_drop_and_the_loop_survives(tmp_path: Path) -> None:
    async def scenario() -> None:
        b = _broker(tmp_path, "flooding")

        def boom(pub: Publication, from_hop: str | None) -> None:
            raise RuntimeError("bad plug-in")

        b.algo.on_publication = boom  # type: ignore[method-assign,assignment]
        b.handle(("b-v0-0", Publication("p1", "pub", {"x": 1}), None))
        assert b.counters["errors"] == 1 and b.counters["drop"] == 1
        b.events.close()
        drop = [e for e in read_events(tmp_path / "events.jsonl") if e["ev"] == "drop"]
        assert drop[0]["link"] == "b-v0-0" and "bad plug-in" in drop[0]["reason"]

    asyncio.run(scenario())


def test_a_local_subscription_the_plug_in_fails_on_is_refused_never_acknowledged(tmp_path: Path) -> None:
    async def scenario() -> None:
        b = _broker(tmp_path, "rpf")

        def boom(sub: Subscription, from_hop: str | None) -> None:
            raise KeyError("b-v9-0")

        b.algo.on_subscription = boom  # type: ignore[method-assign,assignment]
        session = b.open_session(Subscription("s1", Filter.parse("price > 10"), b.id), "c1")
        b.handle(b.input.get_nowait())
        assert session.accepted.done() and isinstance(session.accepted.exception(), SessionRefused)
        assert str(session.accepted.exception()) == (
            "subscription 's1': routing 'rpf' failed on it: error: KeyError: 'b-v9-0'"
        )
        assert b.counters["errors"] == 1
        b.events.close()

    asyncio.run(scenario())


def test_the_brokers_whose_plug_in_raised_are_named_for_the_run() -> None:
    from scotbed.broker.fleet import routing_errors

    quiet = pb.StatusReply(broker_id="b-v0-0", counters={"deliver": 3})
    failing = pb.StatusReply(broker_id="b-v1-0", counters={"errors": 2, "drop": 2})
    assert routing_errors({"b-v0-0": quiet}) is None
    assert routing_errors({"b-v1-0": failing, "b-v0-0": quiet}) == (
        "routing failed on messages at 1 broker(s): b-v1-0 (2); see their stderr and drop events"
    )


def test_prometheus_endpoint_exposes_queues_counters_and_matching_time(tmp_path: Path) -> None:
    from scotbed.broker.launcher import reserve_ports
    from scotbed.broker.metrics import Metrics

    async def scenario() -> str:
        b = _broker(tmp_path, "flooding")
        sock = reserve_ports(1)[0]
        port = sock.getsockname()[1]
        sock.close()
        metrics = Metrics(b, port, "127.0.0.1")
        try:
            b.handle(("b-v0-0", Publication("p1", "pub", {"x": 1}), None))
            metrics.refresh()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                return str(r.read().decode())
        finally:
            metrics.close()

    text = asyncio.run(scenario())
    assert 'scotbed_output_queue_len{broker="b-v1-0",link="b-v2-0"} 1.0' in text
    assert 'scotbed_messages{broker="b-v1-0",counter="notif_in"} 1.0' in text
    assert 'scotbed_match_us_count{broker="b-v1-0"} 1.0' in text


def test_a_forwarded_envelope_carries_every_header_and_the_notification_as_it_arrived() -> None:
    """The envelope a broker forwards is the arriving notification (its attributes untouched) under the
    publication's headers, each as set, defaults included: a DNR header of 0 is a header."""
    raw = pb.Notification(pub_id="p", publisher="x", intended_ns=5, sent_ns=6)
    raw.attrs["symbol"].s = "IBM"
    raw.attrs["price"].i = 7
    headers = {"bids": ("b-v1-0", "b-v2-0"), "hops": 3, "dynamic": True, "distance": 2, "count": 1}
    for pub in (
        Publication(
            "p", "x", {"symbol": "IBM", "price": 7}, 5, 6, "b-v0-0", cbv=0, tree_version=4, **headers
        ),
        Publication("p", "x", {"symbol": "IBM", "price": 7}, 5, 6, "b-v0-0"),
    ):
        env = encode(pub, raw)
        assert env.notification.notification == raw
        assert from_envelope(env) == pub
        assert env.notification.has_cbv == (pub.cbv is not None)
        assert from_envelope(envelope(pub)) == pub


def test_a_delivery_carries_the_notification_as_it_arrived() -> None:
    raw = pb.Notification(pub_id="p", publisher="x", sent_ns=6)
    raw.attrs["symbol"].s = "IBM"
    assert delivery(raw, "s1", 9, 2) == pb.Delivery(notification=raw, sub_id="s1", broker_ns=9, hops=2)
