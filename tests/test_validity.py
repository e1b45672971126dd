"""Host-bound detection: the broker's loop probe and the validity verdict, on known answers."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from scotbed import contract, topology
from scotbed.analysis.synth import SynthSpec, synthesise
from scotbed.analysis.validity import (
    HOST_BOUND,
    UNKNOWN,
    VALID,
    Bounds,
    Delay,
    LoopSample,
    Window,
    assess,
    cores_of,
)
from scotbed.broker.client import BrokerClient
from scotbed.broker.eventlog import read_events
from scotbed.broker.fleet import wait_quiescent
from scotbed.broker.launcher import LocalCluster
from scotbed.broker.looplag import SCHEDSTAT, LoopProbe, run_queue_wait_ns

S = 1_000_000_000
T0 = 1_700_000_000 * S


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_the_probe_reports_max_and_mean_lag_and_the_cpu_share_of_its_period() -> None:
    wall, cpu, wait = Clock(), Clock(), [7_000_000]
    probe = LoopProbe(period_s=0.1, clock=wall, cpu_clock=cpu, wait_clock=lambda: wait[0])
    for lag in (0.001, 0.003, -0.0005, 0.020):
        probe.record(lag)
    wall.t += 0.5
    cpu.t += 0.2
    wait[0] += 30_000_000
    first = {
        "lag_ms_max": 20.0,
        "lag_ms_mean": 6.0,
        "probes": 4,
        "cpu": 0.4,
        "wall_ms": 500.0,
        "wait_ms": 30.0,
    }
    assert probe.take() == first
    wall.t += 0.25
    idle = {"lag_ms_max": 0.0, "lag_ms_mean": 0.0, "probes": 0, "cpu": 0.0, "wall_ms": 250.0, "wait_ms": 0.0}
    assert probe.take() == idle
    # where the kernel does not report run-queue wait, the field is absent
    bare = LoopProbe(clock=wall, cpu_clock=cpu, wait_clock=lambda: None)
    wall.t += 0.1
    assert "wait_ms" not in bare.take()


def test_the_run_queue_wait_is_read_from_the_kernel_where_it_reports_it(tmp_path: Path) -> None:
    f = tmp_path / "schedstat"
    f.write_text("123 4567 8\n")
    assert run_queue_wait_ns(f) == 4567
    assert run_queue_wait_ns(tmp_path / "absent") is None
    if SCHEDSTAT.exists():  # Linux: the real file parses
        assert isinstance(run_queue_wait_ns(), int)


def test_the_probe_s_timer_takes_the_samples_on_its_own_wake_ups() -> None:
    """One timer for the probe and the samples (the clock is read at construction, at the start and
    twice a wake-up): a sample on the first wake-up at or past each 250 ms,
    and after a stall the next one a whole period later, not a burst of catch-up samples."""
    wake_ups = [0.1 * k for k in range(1, 11)] + [2.05, 2.15, 2.25, 2.35]  # a stall from 1.0 s to 2.05 s
    clock_values = iter([0.0, 0.0] + [t for w in wake_ups for t in (round(w - 0.1, 2), w)])
    sampled: list[float] = []
    now = [0.0]

    def clock() -> float:
        now[0] = next(clock_values)
        return now[0]

    class Done(Exception):
        pass

    def sample() -> None:
        sampled.append(now[0])
        if len(sampled) == 6:
            raise Done

    probe = LoopProbe(period_s=0.0, clock=clock, cpu_clock=lambda: 0.0, wait_clock=lambda: None)
    with pytest.raises(Done):
        asyncio.run(probe.run(0.25, sample))
    assert [round(t, 2) for t in sampled] == [0.3, 0.5, 0.8, 1.0, 2.05, 2.35]


def test_a_blocked_event_loop_shows_as_lag_and_a_busy_one_as_cpu() -> None:
    async def scenario() -> tuple[dict[str, float], float, float]:
        probe = LoopProbe(period_s=0.01)
        task = asyncio.create_task(probe.run())
        await asyncio.sleep(0.05)
        probe.take()
        start = time.monotonic()
        await asyncio.sleep(0.005)
        blocked = time.monotonic()
        while time.monotonic() - blocked < 0.15:  # hold the loop (and a core) for 150 ms of wall time
            pass
        blocked = time.monotonic() - blocked
        await asyncio.sleep(0.03)
        fields = probe.take()
        task.cancel()
        return fields, blocked, time.monotonic() - start

    fields, blocked, elapsed = asyncio.run(scenario())
    # the timer due during the block woke at its end at the earliest, and no later than the scenario ended
    assert blocked - 0.01 <= fields["lag_ms_max"] / 1000.0 <= elapsed
    assert fields["probes"] >= 1
    assert 0.0 < fields["cpu"] <= 1.05


def _samples(nodes: int, seconds: int, lag: float, cpu: float, hot: dict[str, float] | None = None) -> list:
    """``nodes`` brokers sampling every 250 ms for ``seconds``; ``hot`` overrides lag_ms_max per node."""
    out = []
    for k in range(seconds * 4):
        for i in range(nodes):
            node = f"b-{i}"
            lag_max = (hot or {}).get(node, lag)
            out.append(LoopSample(node, T0 + k * S // 4 + S // 8, lag_max, lag_max / 2, cpu, 250.0))
    return out


WINDOW = Window(T0, T0 + 10 * S, T0 + 10 * S)


def test_an_idle_host_is_valid_with_every_figure_known() -> None:
    v = assess(_samples(4, 10, lag=1.0, cpu=0.1), WINDOW, Delay(20.0, 3.0, {"mean": 0.5}), cores=2)
    assert v.verdict == VALID
    assert v.loop_lag_ms == {"mean": 0.5, "max": 1.0, "periods": 160, "lagging_periods": 0}
    assert v.explained_ms == pytest.approx(4 * 4 * 0.5 + 0.5)  # 4 brokers visited, 4 waits each
    assert v.explained_share == pytest.approx(8.5 / 20.0)
    assert v.cpu["saturation_mean"] == pytest.approx(4 * 0.1 / 2)
    assert v.cpu["broker_cpu_s"] == pytest.approx(4.0)
    assert v.brokers == [] and v.windows == []
    assert v.cpu["run_queue_wait"] is None  # samples without wait_ms
    # demand 0.2 of the host, hottest broker 0.1 of a core: at 0.5 utilisation time_scale 0.4 suffices
    assert v.suggested_time_scale == pytest.approx(0.4)
    assert v.line() == (
        "valid: host load adds at most 8.5 ms to a delivery, under the 20 ms of an event loop's normal "
        "lateness; 0.0% of broker periods lagged > 20 ms (bound 5%); the run used 20% of 2 cores (bound 90%)"
    )


def test_lag_that_explains_the_delay_makes_the_run_host_bound() -> None:
    v = assess(_samples(4, 10, lag=16.0, cpu=0.2), WINDOW, Delay(200.0, 2.0, {"mean": 6.0}), cores=2)
    assert v.verdict == HOST_BOUND
    assert v.explained_ms == pytest.approx(3 * 4 * 8.0 + 6.0)  # 102 of 200 ms: 51 %
    assert "(51% >= 25%, >= 20 ms)" in v.reasons[0]
    assert v.lagging_periods == 0.0  # 16 ms is under the 20 ms bound: only criterion A holds
    # the same share of a fast overlay's delay is the loop's granularity, not the host
    fast = assess(_samples(4, 10, lag=1.0, cpu=0.2), WINDOW, Delay(4.0, 2.0, {"mean": 0.5}), cores=2)
    assert fast.verdict == VALID and fast.explained_share == pytest.approx(6.5 / 4.0)
    assert "(162% >= 25%, < 20 ms)" in fast.reasons[0]


def test_frequent_lag_names_the_brokers_and_the_windows() -> None:
    samples = _samples(10, 10, lag=1.0, cpu=0.1, hot={"b-3": 50.0})  # one broker lags all the time: 10 %
    for s in _samples(10, 2, lag=80.0, cpu=0.9):  # and every broker during seconds 4–5
        samples.append(LoopSample(s.node, s.ts_ns + 4 * S, s.lag_ms_max, s.lag_ms_mean, s.cpu, s.wall_ms))
    v = assess(samples, WINDOW, Delay(1000.0, 1.0), cores=64)
    assert v.verdict == HOST_BOUND
    assert v.loop_lag_ms["lagging_periods"] == 40 + 80
    assert v.lagging_periods == pytest.approx(120 / 480)
    assert v.brokers[0]["node"] == "b-3" and v.brokers[0]["lagging_periods"] == 1.0
    assert v.windows == [{"start_s": 0.0, "end_s": 10.0}]  # b-3 alone is 10 % of every bin
    strict = Bounds(lag_periods_max=0.5)
    assert assess(samples, WINDOW, Delay(1000.0, 1.0), 64, bounds=strict).windows == [
        {"start_s": 4.0, "end_s": 6.0}
    ]


def test_a_saturated_host_is_host_bound_and_the_time_scale_suggestion_follows_the_cpu_demand() -> None:
    # 8 brokers at 0.25 of a core on 2 cores: saturation 100 %; the run took 10 s for 5 s intended
    window = Window(T0, T0 + 5 * S, T0 + 10 * S)
    v = assess(_samples(8, 10, lag=1.0, cpu=0.25), window, Delay(1000.0, 1.0), cores=2, time_scale=2.0)
    assert v.verdict == HOST_BOUND
    assert v.cpu["saturation_mean"] == pytest.approx(1.0)
    assert v.cpu["demand"] == pytest.approx(2.0)  # 20 CPU s over 5 intended s on 2 cores
    assert v.suggested_time_scale == pytest.approx(2.0 * 2.0 / 0.5)
    assert v.line() == (
        "HOST-BOUND: the run used 100% of 2 cores (bound 90%); suggested time_scale >= 8; see report"
    )
    assert any("100% of 2 cores (>= 90%)" in r for r in v.reasons)
    waited = [LoopSample(s.node, s.ts_ns, 1.0, 0.5, 0.25, 250.0, 100.0) for s in _samples(8, 10, 1.0, 0.25)]
    w = assess(waited, window, Delay(1000.0, 1.0), cores=2)
    assert w.cpu["run_queue_wait"] == pytest.approx(0.4)
    assert "broker loops waited for a core 40.0% of the time" in w.reasons
    # on k8s the cores are unknown: no saturation criterion, the hottest broker drives the suggestion
    k8s = assess(_samples(8, 10, lag=1.0, cpu=0.25), window, Delay(1000.0, 1.0), cores=None, time_scale=2.0)
    assert k8s.verdict == VALID and k8s.cpu["saturation_mean"] is None
    assert k8s.suggested_time_scale == pytest.approx(2.0 * 0.5 / 0.5)


def _clients(processes: int, seconds: int, lag: float, cpu: float) -> list:
    """``processes`` Locust workers logging ``client_loop`` every 250 ms."""
    return [
        LoopSample(f"locust-w{i}", T0 + k * S // 4 + S // 8, lag, lag / 2, cpu, 250.0)
        for k in range(seconds * 4)
        for i in range(processes)
    ]


def test_client_processes_count_in_the_explained_delay_and_in_the_host_load() -> None:
    brokers = _samples(4, 10, lag=1.0, cpu=0.2)  # 40 % of 2 cores: valid on their own
    alone = assess(brokers, WINDOW, Delay(40.0, 1.0, {"mean": 0.5}), cores=2)
    assert alone.verdict == VALID and alone.clients == {}
    # two Locust workers each busy 0.6 of a core with 30 ms lag: the host is at 100 %, and a delivery
    # waits once for its subscriber's loop (15 ms mean) before its receive time is taken
    v = assess(brokers, WINDOW, Delay(40.0, 1.0, {"mean": 0.5}), 2, clients=_clients(2, 10, 30.0, 0.6))
    assert v.verdict == HOST_BOUND
    assert v.explained_ms == pytest.approx(2 * 4 * 0.5 + 0.5 + 15.0)
    assert v.clients == {
        "processes": 2,
        "lag_ms_mean": 15.0,
        "lag_ms_max": 30.0,
        "lagging_periods": 1.0,
        "cpu_s": pytest.approx(12.0),
        "saturation_mean": pytest.approx(0.6),
    }
    assert v.cpu["saturation_mean"] == pytest.approx(0.4)
    assert v.cpu["host_saturation_mean"] == pytest.approx(1.0)
    assert v.cpu["demand"] == pytest.approx(1.0)  # 20 CPU s over 10 intended s on 2 cores
    assert v.suggested_time_scale == pytest.approx(2.0)
    assert "brokers used 40% + clients 60% of 2 cores (>= 90%)" in v.reasons
    lagged = "client processes' loops lagged 15.00 ms on average, > 20 ms in 100.0% of their periods"
    assert lagged in v.reasons


def test_samples_outside_the_window_do_not_count_and_no_samples_is_unknown() -> None:
    late = [LoopSample("b-0", T0 + 20 * S, 500.0, 500.0, 1.0, 250.0)]
    v = assess(_samples(2, 10, 1.0, 0.1) + late, WINDOW, Delay(20.0, 1.0), cores=2)
    assert v.verdict == VALID and v.loop_lag_ms["max"] == 1.0
    assert assess(late, WINDOW, Delay(20.0, 1.0), 2).verdict == UNKNOWN
    none = assess([], WINDOW, Delay(20.0, 1.0), 2)
    assert none.verdict == UNKNOWN and none.line() == "unknown: no loop events in the logs"


def test_the_cores_come_from_the_run_provenance_except_on_k8s() -> None:
    from scotbed.experiment.spec import parse_spec

    provenance = {"host": {"cpus": 2}}
    assert cores_of(parse_spec({"name": "x"}), provenance) == 2
    assert cores_of(parse_spec({"name": "x", "backend": "k8s"}), provenance) is None
    assert cores_of(parse_spec({"name": "x"}), {}) is None


def _window_of(run: Path) -> tuple[int, int]:
    """First intended publication and last receive, read straight from the files."""
    pubs = [json.loads(x) for x in (run / contract.PUBLICATIONS).read_text().splitlines()]
    recv = [
        json.loads(x)["ts_ns"]
        for f in (run / contract.EVENTS_DIR).glob("*.jsonl")
        for x in f.read_text().splitlines()
        if '"receive"' in x
    ]
    return min(p["intended_ns"] for p in pubs), max(recv)


@pytest.mark.spark
@pytest.mark.parametrize(("lag_ms", "verdict"), [(0.02, VALID), (30.0, HOST_BOUND)])
def test_the_summary_carries_the_verdict_of_a_synthesised_run(
    spark: Any, tmp_path: Path, lag_ms: float, verdict: str
) -> None:
    from scotbed.analysis.api import analyze

    run = tmp_path / "synth-20260101T000000-00000001"
    spec = SynthSpec(brokers=5, publications=200, loop_lag_ms=lag_ms, loop_cpu=0.1, cores=2)
    spec = dataclasses.replace(spec, client_lag_ms=lag_ms)
    synthesise(run, spec)
    start, end = _window_of(run)
    loops = [
        json.loads(x)
        for f in (run / contract.EVENTS_DIR).glob("b-*.jsonl")
        for x in f.read_text().splitlines()
        if '"loop"' in x
    ]
    periods = sum(start <= e["ts_ns"] <= end for e in loops)
    assert periods >= 5 * 4  # every broker sampled at least four times while publishing

    doc = analyze(run, spark=spark)
    v, n = doc["validity"], doc["notifications"]
    assert v["verdict"] == verdict
    assert v["loop_lag_ms"] == {
        "mean": pytest.approx(lag_ms),
        "max": 2 * lag_ms,
        "periods": periods,
        "lagging_periods": periods if 2 * lag_ms > 20.0 else 0,
    }
    send = v["send_lag_ms"]["mean"]
    assert 0 < send < 0.05  # the synthesiser sends within 50 µs of the intended time
    assert v["explained_ms"] == pytest.approx((n["hops"]["mean"] + 1) * 4 * lag_ms + send + lag_ms)
    assert v["clients"]["processes"] == 4 and v["clients"]["lag_ms_mean"] == pytest.approx(lag_ms)
    assert v["cpu"]["client_saturation_mean"] == pytest.approx(
        v["clients"]["cpu_s"] / ((end - start) / 1e9) / 2
    )
    assert v["explained_share"] == pytest.approx(v["explained_ms"] / n["delay_ms"]["mean"])
    assert v["cpu"]["cores"] == 2 and v["cpu"]["saturation_mean"] == pytest.approx(
        periods * 0.1 * 0.25 / ((end - start) / 1e9) / 2
    )
    assert (run / contract.PLOTS_DIR / "loop_lag.png").exists()
    assert ("HOST-BOUND" in (run / contract.REPORT).read_text()) == (verdict == HOST_BOUND)
    if verdict == HOST_BOUND:
        assert v["windows"] == [{"start_s": 0.0, "end_s": pytest.approx(v["windows"][0]["end_s"])}]
        assert v["windows"][0]["end_s"] >= (end - start) / 1e9
        assert {b["node"] for b in v["brokers"]} == {f"b-v{i}-0" for i in range(5)}


def test_the_spec_block_types_the_bounds_and_the_resolved_spec_round_trips_to_them(tmp_path: Path) -> None:
    from scotbed.experiment.spec import SpecError, dump_spec, load_resolved, parse_spec

    spec = parse_spec({"name": "x"}, ("analysis.host_bound.lag_bound_ms=5",))
    (tmp_path / "a.yaml").write_text(dump_spec(spec))
    (tmp_path / "b.yaml").write_text(dump_spec(parse_spec({"name": "x"})))
    assert load_resolved(tmp_path / "a.yaml").analysis.host_bound == Bounds(lag_bound_ms=5.0)
    assert load_resolved(tmp_path / "b.yaml").analysis.host_bound == Bounds()
    for bad in ("analysis.host_bound.lag_periods_max=2", "analysis.host_bound.lag_bound=5"):
        with pytest.raises(SpecError, match="host_bound"):
            parse_spec({"name": "x"}, (bad,))


# --- real brokers: a broker the host does not schedule is host-bound ------------------------------

PATH3 = topology.tree(topology.path(3))
STOP_S, EVERY_S = 0.15, 0.25  # the middle broker is not scheduled for 150 ms of every 250 ms


async def _publish_through(cluster: LocalCluster, n: int, rate_per_s: float) -> tuple[list[int], list[int]]:
    """One subscriber on b-v2-0, ``n`` notifications from b-v0-0 on schedule (through b-v1-0); returns
    the intended and the receive times (ns) of the deliveries."""
    addrs = cluster.addresses()
    pub, sub = BrokerClient(addrs["b-v0-0"]), BrokerClient(addrs["b-v2-0"])
    try:
        stream = await sub.subscribe("s", "x >= 0", "test")
        await wait_quiescent(addrs, timeout_s=30)
        start = time.time_ns() + 100_000_000
        intended = []
        for k in range(n):
            at = start + int(k * 1e9 / rate_per_s)
            await asyncio.sleep(max(0.0, (at - time.time_ns()) / 1e9))
            await pub.publish([(f"p{k}", {"x": k})], "test", intended_ns=at)
            intended.append(at)
        deadline = time.monotonic() + 30
        while len(stream.received) < n and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        by_pub = {
            d.notification.pub_id: ns for d, ns in zip(stream.received, stream.received_ns, strict=True)
        }
        assert sorted(by_pub) == sorted(f"p{k}" for k in range(n)) and len(stream.received) == n
        assert {d.hops for d in stream.received} == {2}
        return intended, [by_pub[f"p{k}"] for k in range(n)]
    finally:
        await asyncio.gather(pub.close(), sub.close())


def _stop_and_go(cluster: LocalCluster, broker: str, until: threading.Event) -> None:
    while not until.is_set():
        cluster.signal(broker, signal.SIGSTOP)
        time.sleep(STOP_S)
        cluster.signal(broker, signal.SIGCONT)
        until.wait(EVERY_S - STOP_S)


def _judge(tmp_path: Path, starve: bool) -> Any:
    log = {"sample_interval_ms": 100.0, "flush_interval_ms": 100.0}
    with LocalCluster.from_topology(PATH3, tmp_path, routing="rpf", matching="counting", log=log) as cluster:
        done = threading.Event()
        stopper = threading.Thread(target=_stop_and_go, args=(cluster, "b-v1-0", done))
        if starve:
            stopper.start()
        try:
            intended, received = asyncio.run(_publish_through(cluster, n=60, rate_per_s=20.0))
        finally:
            done.set()
            if starve:
                stopper.join()
                cluster.signal("b-v1-0", signal.SIGCONT)
        cluster.flush_all()
        events = [e for b in cluster.addresses() for e in read_events(cluster.event_log(b))]
    samples = [
        LoopSample(
            e["node"], e["ts_ns"], e["lag_ms_max"], e["lag_ms_mean"], e["cpu"], e["wall_ms"], e.get("wait_ms")
        )
        for e in events
        if e["ev"] == contract.LOOP
    ]
    delays = [(r - i) / 1e6 for i, r in zip(intended, received, strict=True)]
    window = Window(intended[0], intended[-1], max(received))
    return assess(samples, window, Delay(sum(delays) / len(delays), 2.0), os.cpu_count())


@pytest.mark.slow
def test_a_broker_the_host_does_not_schedule_makes_the_run_host_bound(tmp_path: Path) -> None:
    v = _judge(tmp_path, starve=True)
    assert v.verdict == HOST_BOUND, v.line()
    assert v.brokers[0]["node"] == "b-v1-0" and v.brokers[0]["lagging_periods"] >= 0.5
    assert v.brokers[0]["lag_ms_max"] >= STOP_S * 1000 * 0.9
    assert v.windows and v.windows[0]["start_s"] <= 1.0 and v.windows[-1]["end_s"] >= 2.0
    assert v.explained_share is not None and v.explained_share >= Bounds().delay_share_max


# an idle process on the same host, probing its own loop like a broker does: the control
CONTROL = """
import asyncio, json, time
from scotbed.broker.looplag import SCHEDSTAT, LoopProbe, run_queue_wait_ns
async def main():
    probe = LoopProbe()
    asyncio.create_task(probe.run())
    while True:
        await asyncio.sleep(0.1)
        print(json.dumps({"ts_ns": time.time_ns(), **probe.take()}), flush=True)
asyncio.run(main())
"""


@pytest.mark.slow
def test_the_same_run_is_valid_unless_an_idle_process_on_the_host_lags_as_well(tmp_path: Path) -> None:
    """On a quiet host the run is valid; on a host busy with other work (a shared CI runner, other
    experiments) an idle control process lags too, and then the verdict must say host-bound and that
    no time scale helps. Either way the verdict agrees with the control."""
    control = subprocess.Popen([sys.executable, "-c", CONTROL], stdout=subprocess.PIPE, text=True)
    try:
        v = _judge(tmp_path, starve=False)
    finally:
        control.terminate()
        out, _ = control.communicate(timeout=30)
    takes = [json.loads(x) for x in out.splitlines()]
    inside = [t for t in takes if v.window["start_ns"] <= t["ts_ns"] <= v.window["end_ns"]]
    assert len(inside) >= 20
    b = Bounds()
    idle_lagging = sum(t["lag_ms_max"] > b.lag_bound_ms for t in inside) / len(inside)
    # criterion A on the control: the delay its mean lag would explain on the run's path (3 brokers). A
    # host with steady work but no long stall lags every loop a little: no lagging period, yet the
    # brokers' mean lag can cross A's bound (CI, 2026-11-27: 1.76 ms, 21.1 ms explained), so such a
    # host is not called quiet.
    idle_explains = 3 * b.waits_per_hop * sum(t["lag_ms_mean"] for t in inside) / len(inside)
    assert v.loop_lag_ms["periods"] >= 3 * 10  # three brokers, sampled every 100 ms (later when lagging), 3 s
    seen = f"idle control lagged in {idle_lagging:.0%}, its mean lag explains {idle_explains:.1f} ms"
    if idle_lagging < b.lag_periods_max / 2 and idle_explains < b.lag_bound_ms / 2:
        assert v.verdict == VALID, f"{v.line()} ({seen})"
    elif idle_lagging >= b.lag_periods_max:  # between the two the host is borderline: no claim
        assert v.verdict == HOST_BOUND and v.suggested_time_scale is None, f"{v.line()} ({seen})"


def test_lag_the_average_demand_does_not_explain_gets_no_time_scale_suggestion() -> None:
    v = assess(_samples(4, 10, lag=50.0, cpu=0.05), WINDOW, Delay(200.0, 2.0), cores=2)
    assert v.verdict == HOST_BOUND and v.suggested_time_scale is None
    assert "no time_scale follows from the demand" in v.reasons[-1] and "suggested" not in v.line()


# --- the verdict sentence: one line that states the figures the rule compares ----------------------


def _verdicts() -> dict[str, Any]:
    """The known-answer cases above: valid, each criterion met alone, and lag from other work."""
    saturated = Window(T0, T0 + 5 * S, T0 + 10 * S)
    return {
        "idle": assess(_samples(4, 10, lag=1.0, cpu=0.1), WINDOW, Delay(20.0, 3.0, {"mean": 0.5}), cores=2),
        "small share": assess(_samples(4, 10, 1.0, 0.1), WINDOW, Delay(200.0, 3.0, {"mean": 0.5}), cores=2),
        "fast overlay": assess(_samples(4, 10, 1.0, 0.2), WINDOW, Delay(4.0, 2.0, {"mean": 0.5}), cores=2),
        "A": assess(_samples(4, 10, lag=16.0, cpu=0.2), WINDOW, Delay(200.0, 2.0, {"mean": 6.0}), cores=2),
        "A, all": assess(_samples(4, 10, lag=16.0, cpu=0.2), WINDOW, Delay(50.0, 2.0), cores=2),
        "B": assess(_samples(4, 10, lag=50.0, cpu=0.05), WINDOW, Delay(2000.0, 2.0), cores=2),
        "C": assess(_samples(8, 10, 1.0, 0.25), saturated, Delay(1000.0, 1.0), cores=2, time_scale=2.0),
        "k8s": assess(_samples(8, 10, 1.0, 0.25), saturated, Delay(1000.0, 1.0), cores=None),
    }


@pytest.mark.parametrize("case", list(_verdicts()))
def test_the_verdict_sentence_states_the_share_the_rule_compares_and_never_contradicts_it(case: str) -> None:
    v = _verdicts()[case]
    text = v.line()
    b = Bounds()
    head, _, rest = text.partition(": ")
    assert head == ("HOST-BOUND" if v.host_bound else "valid")
    assert ("see report" in text) == v.host_bound and "\n" not in text
    share = v.explained_share
    assert share is not None
    stated = [int(p) for p in re.findall(r"explains (?:at most|up to) (\d+)% of", rest)]
    a_met = share >= b.delay_share_max and (v.explained_ms or 0.0) >= b.lag_bound_ms
    if stated:  # the percent stated is the rule's share, on the side of the bound the verdict says
        assert stated == [round(share * 100)]
        assert (share >= b.delay_share_max) == a_met
    if v.host_bound:
        assert a_met == ("host load explains up to" in rest or "host load could explain all" in rest)
        assert ("could explain all" in rest) == (a_met and share >= 1.0)
        assert (v.lagging_periods >= b.lag_periods_max) == ("of broker periods lagged" in rest)
    else:
        assert not a_met and "could explain all" not in rest
        if share >= b.delay_share_max:  # valid for the other half of A: the waits are under the ms bound
            assert f"adds at most {v.explained_ms:.1f} ms to a delivery, under the 20 ms" in rest
            assert v.explained_ms is not None and v.explained_ms < b.lag_bound_ms


def test_the_verdict_sentences_of_the_known_cases() -> None:
    lines = {case: v.line() for case, v in _verdicts().items()}
    assert lines["small share"].startswith(
        "valid: host load explains at most 4% of the 200.0 ms mean delay (bound 25%); "
        "0.0% of broker periods lagged > 20 ms (bound 5%)"
    )
    assert (
        lines["A"]
        == "HOST-BOUND: host load explains up to 51% of the 200.0 ms mean delay (bound 25%); see report"
    )
    assert lines["A, all"].startswith(
        "HOST-BOUND: host load could explain all of the 50.0 ms mean delay (an estimated 96.0 ms of waits)"
    )
    assert lines["B"] == ("HOST-BOUND: 100.0% of broker periods lagged > 20 ms (bound 5%); see report")
    assert lines["k8s"] == (
        "valid: host load explains at most 0% of the 1000.0 ms mean delay (bound 25%); "
        "0.0% of broker periods lagged > 20 ms (bound 5%)"
    )
    assert _verdicts()["idle"].line().startswith("valid: host load adds at most 8.5 ms")
