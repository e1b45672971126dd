"""The broker's per-message service time (scotbed.broker.service): the server's clock, the spec's
``brokers`` block, and a known burst queueing at a slow broker's input on real broker processes.

Known answer. Path v0 — v1 — v2, only v1 slow (service time s). R = [0, 100] at v0, then K = 9
children it covers, also at v0: R floods the path, each child goes v0→v1 only (v0's local R does
not cover towards v1, the child's only way) and is held at v1 (R covers it towards v2). unsub R:
covering-active releases the K children at v0 with the unsubscription, K + 1 messages in one
decision, so one batch reaches v1 at once: v1's input queue peaks at K + 1. v1 serves them one per
s; R's unsubscription, served last, releases the K children v1 held, so v2 gets K + 1 messages at
once too, (K + 1)·s after the burst left v0. covering-packing packs the released children into the
one unsubscription: every peak is 1, but v1 serves each packed child (K + 1 service times, as the
paper's packing: fewer messages, the same processing) before it passes its one message on.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from scotbed import contract, topology
from scotbed.broker.eventlog import read_events
from scotbed.broker.launcher import HOST, LocalCluster
from scotbed.broker.service import Server, units
from scotbed.config import build_configs
from scotbed.experiment.spec import SpecError, parse_spec
from scotbed.filters import Filter
from scotbed.messages import Subscription, Unsubscription
from scotbed.orchestrator.plan import broker_configs, service_times
from scotbed.workloads.script import parse

SERVICE_US = 40_000.0
K = 9
FILTER = Filter.from_json([{"attr": "x", "op": "exists"}])
FAST_LOG = {"sample_interval_ms": 100.0, "flush_interval_ms": 100.0}


def test_the_server_takes_one_message_per_service_time() -> None:
    s = Server(10_000)  # 10 ms
    assert s.active and not Server(0).active
    assert [round(s.wait_s(0.0), 6) for _ in range(3)] == [0.01, 0.02, 0.03]  # three taken at 0
    assert round(s.wait_s(0.025), 6) == 0.015  # the fourth waits for the third's service to end
    s.ended(backlog=False)
    assert round(s.wait_s(1.0), 6) == 0.01  # idle in between: a full service time from now


def test_a_late_wake_up_shortens_the_next_wait_so_the_rate_stays_exact() -> None:
    s = Server(10_000)
    assert round(s.wait_s(0.0), 6) == 0.01
    s.ended(backlog=True)
    assert round(s.wait_s(0.013), 6) == 0.007  # taken 3 ms late: its service ends at 0.02 all the same
    s.ended(backlog=True)
    assert round(s.wait_s(0.035), 6) == -0.005  # 15 ms late: no wait, the server catches up
    s.ended(backlog=False)
    assert round(s.wait_s(0.035), 6) == 0.01  # nothing was waiting: the next one starts when it is taken


def test_a_packed_message_costs_a_service_time_per_subscription_it_carries() -> None:
    s = Server(10_000)
    packed = Unsubscription(
        "R", "b-v0-0", packed=tuple(Subscription(f"C{c}", FILTER, "b-v0-0") for c in range(3))
    )
    assert units(packed) == 4 and units(Unsubscription("R", "b-v0-0")) == 1
    assert round(s.wait_s(0.0, s.cost_s(packed)), 6) == 0.04
    assert round(s.wait_s(0.0), 6) == 0.05  # the next one waits for all four


def _spec(brokers: dict[str, object], time_scale: float = 1.0) -> dict[str, object]:
    return {
        "name": "svc",
        "topology": {"kind": "tree", "acyclic": {"kind": "path", "n": 3}},
        "routing": "covering-active",
        "brokers": brokers,
        "workload": {"time_scale": time_scale},
    }


def test_the_spec_sets_service_times_per_vertex_scaled_with_time() -> None:
    spec = parse_spec(_spec({"service_us": 100, "service_us_at": {"v1": 5000}}, time_scale=2.0))
    scot = topology.tree(topology.path(3))
    assert service_times(spec, scot) == {"b-v0-0": 200.0, "b-v1-0": 10_000.0, "b-v2-0": 200.0}
    addresses = {b.id: f"{HOST}:0" for b in scot.brokers}
    assert [c.service_us for c in broker_configs(spec, scot, addresses)] == [200.0, 10_000.0, 200.0]
    assert {c.service_us for c in broker_configs(parse_spec(_spec({})), scot, addresses)} == {0.0}


def test_a_vertex_the_overlay_lacks_or_a_negative_time_is_an_error() -> None:
    scot = topology.tree(topology.path(3))
    with pytest.raises(SpecError, match=r"brokers\.service_us_at: x9 not a vertex"):
        service_times(parse_spec(_spec({"service_us_at": {"x9": 1}})), scot)
    with pytest.raises(SpecError, match=r"brokers\.service_us_at"):
        parse_spec(_spec({"service_us_at": {"v1": -1}}))
    with pytest.raises(SpecError, match=r"brokers\.service"):
        parse_spec(_spec({"service": 1}))


def _script() -> str:
    root = [{"attr": "x", "op": "between", "value": [0, 100]}]
    lines: list[dict[str, object]] = [{"op": "subscribe", "sub_id": "R", "broker": "b-v0-0", "filter": root}]
    for c in range(K):
        flt = [{"attr": "x", "op": "between", "value": [10 * c, 10 * c + 5]}]
        lines.append({"op": "subscribe", "sub_id": f"C{c}", "broker": "b-v0-0", "filter": flt})
    lines += [{"op": "unsubscribe", "sub_id": "R"}, {"op": "sleep", "ms": 400}]  # a sample after the burst
    return "".join(json.dumps(x) + "\n" for x in lines)


def _play(routing: str, workdir: Path) -> list[dict[str, Any]]:
    from scotbed.workloads.script_runner import ScriptSession

    scot = topology.tree(topology.path(3))
    placeholder = {b.id: f"{HOST}:0" for b in scot.brokers}
    configs = [
        dataclasses.replace(c, service_us=SERVICE_US if c.id == "b-v1-0" else 0.0)
        for c in build_configs(scot, placeholder, routing=routing, matching="counting", log=FAST_LOG)
    ]
    script = parse(_script(), [b.id for b in scot.brokers], "burst")
    session: ScriptSession | None = None
    try:
        with LocalCluster(configs, workdir, stop_grace_s=10.0) as cluster:
            session = ScriptSession(script, cluster.addresses(), workdir, stable_s=0.2)
            session.run(timeout_s=120)
            cluster.flush_all()
    finally:
        if session is not None:
            session.close()
    return [e for f in sorted((workdir / contract.EVENTS_DIR).glob("b-*.jsonl")) for e in read_events(f)]


def _peaks(events: list[dict[str, Any]]) -> dict[str, int]:
    peaks: dict[str, int] = defaultdict(int)
    for e in events:
        if e["ev"] == contract.QUEUE and e["link"] == "":
            peaks[str(e["node"])] = max(peaks[str(e["node"])], int(e["peak"]))
    return dict(peaks)


@pytest.mark.slow
@pytest.mark.parametrize(("routing", "burst"), [("covering-active", K + 1), ("covering-packing", 1)])
def test_a_known_burst_peaks_at_the_slow_brokers_input(routing: str, burst: int, tmp_path: Path) -> None:
    events = _play(routing, tmp_path)
    assert _peaks(events) == {"b-v0-0": 1, "b-v1-0": burst, "b-v2-0": burst}
    sent = [e for e in events if e["ev"] in (contract.SUB_OUT, contract.UNSUB_OUT)]
    burst_at = min(int(e["ts_ns"]) for e in sent if e["node"] == "b-v0-0" and e["ev"] == contract.UNSUB_OUT)
    passed_on = [int(e["ts_ns"]) for e in sent if e["node"] == "b-v1-0" and int(e["ts_ns"]) > burst_at]
    assert len(passed_on) == burst
    assert min(passed_on) - burst_at >= (K + 1) * SERVICE_US * 1000  # after serving all of the burst
