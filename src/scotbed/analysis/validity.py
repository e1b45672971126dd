"""Does the run measure the routing or the host? The validity verdict, without I/O.

On one machine every broker and client shares the cores; past some load the delays a run reports
are the host's scheduling, not the algorithm's. Each broker logs a ``loop`` event per sampling period
(:mod:`scotbed.broker.looplag`): the maximum and mean lateness of a periodic timer (*loop lag*) and
the process's CPU share. Over the *measurement window* — the first publication's intended time to the
last delivery — a run is **host-bound** when any of:

A. *lag explains the delay*: ``explained_ms = (hops_mean + 1) · waits_per_hop · lag_mean_ms +
   send_lag_mean_ms + client_lag_mean_ms`` is at least ``delay_share_max`` of the mean notification
   delay. A notification waits for the loop several times at each of the ``hops + 1`` brokers it
   visits — the gRPC read, the input queue, the processing loop, the link sender, the gRPC write each
   resume a task — and the mean timer lateness is the mean wait of a ready task; its delay is measured
   from the intended send time, so a late publisher adds its send lag, and it ends when the
   subscriber's process reads the delivery, after one wait for that client's loop (the Locust
   processes log ``client_loop`` events, the same probe as the brokers'). ``explained_ms``
   must also reach ``lag_bound_ms``: lag under the bound is the loop's normal granularity, and on a
   fast overlay (delays of a few ms) it would otherwise make every run host-bound;
B. *lag is frequent*: at least ``lag_periods_max`` of all brokers' sampling periods saw a wake-up later
   than ``lag_bound_ms``;
C. *the host is saturated*: the brokers' and the client processes' summed CPU share, averaged over
   the window, is at least ``cpu_saturation_max`` of the host's cores (only where the cores are known
   and shared: not on k8s).

Otherwise it is **valid**; **unknown** when the logs hold no ``loop`` event (a run from before them).

Time scale. Broker work is per message, not per second, so the CPU seconds a workload costs do not
depend on ``time_scale``; stretching the run stretches the time they are spread over. A broker's CPU
*demand* is its CPU seconds in the window over the intended publish span; the host's is the sum over
brokers and clients (whose work is per message too) over its cores. The suggested time scale is the
current one times
``max(host demand, hottest broker's demand) / target_utilisation`` (a broker uses at most one core),
rounded up to two significant digits: the smallest at which the estimated utilisation stays at the
target. A host-bound run whose demand, averaged over the window, is already within the target gets no
suggestion: its lag comes from other work on the host or from bursts of its own that the average
hides (a subscription wave, an HRP burst). docs/host-bound.md says how results at different time
scales compare.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from scotbed.experiment.spec import HostBoundSpec as Bounds  # the spec's analysis.host_bound
from scotbed.experiment.spec import Spec

VALID = "valid"
WALL = "wall"  # the run's ts_ns are the host's clock: the host can bound it
VIRTUAL = "virtual"  # the sim backend's clock: delays come from the time model alone
HOST_BOUND = "host-bound"
UNKNOWN = "unknown"
WINDOW_BIN_S = 1.0  # time resolution of the affected windows
MAX_BROKERS_LISTED = 10


@dataclass(frozen=True)
class LoopSample:
    """One ``loop`` event."""

    node: str
    ts_ns: int
    lag_ms_max: float
    lag_ms_mean: float
    cpu: float
    wall_ms: float
    wait_ms: float | None = None  # the loop thread's run-queue wait (Linux)


@dataclass(frozen=True)
class Window:
    """The measurement window: first intended publication, last intended publication, last delivery."""

    start_ns: int
    intended_end_ns: int
    end_ns: int

    def holds(self, ts_ns: int) -> bool:
        return self.start_ns <= ts_ns <= self.end_ns

    @property
    def intended_span_s(self) -> float:
        span = self.intended_end_ns - self.start_ns
        return (span if span > 0 else self.end_ns - self.start_ns) / 1e9


@dataclass(frozen=True)
class Delay:
    """What the run measured: mean notification delay, mean hops, publisher send lag (ms)."""

    mean_ms: float | None
    hops_mean: float
    send_lag_ms: dict[str, Any] = field(default_factory=dict)  # mean, p99, max of sent − intended


@dataclass(frozen=True)
class Validity:
    verdict: str
    reasons: list[str]
    window: dict[str, Any]
    loop_lag_ms: dict[str, Any]
    lagging_periods: float
    explained_ms: float | None
    explained_share: float | None
    send_lag_ms: dict[str, Any]
    cpu: dict[str, Any]
    clients: dict[str, Any]  # the Locust processes' loop lag and CPU (empty: logs without client_loop)
    brokers: list[dict[str, Any]]
    windows: list[dict[str, float]]
    time_scale: float
    suggested_time_scale: float | None
    bounds: dict[str, float]
    clock: str = WALL  # WALL, or VIRTUAL for a run of the sim backend (never host-bound)

    @property
    def host_bound(self) -> bool:
        return self.verdict == HOST_BOUND

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        return line(self.to_json())


def criteria_met(
    explained_ms: float | None,
    share: float | None,
    lagging: float,
    host_saturation: float | None,
    b: Bounds,
) -> tuple[bool, bool, bool]:
    """Criteria A, B and C of the module docstring: met or not."""
    a = share is not None and share >= b.delay_share_max and (explained_ms or 0.0) >= b.lag_bound_ms
    c = host_saturation is not None and host_saturation >= b.cpu_saturation_max
    return a, lagging >= b.lag_periods_max, c


def line(doc: Mapping[str, Any]) -> str:
    """The verdict in one sentence, from the ``validity`` section's JSON: for a valid run what keeps
    each criterion under its bound, for a host-bound run the criteria met; the figures are the ones
    the rule compares (the reasons hold the rest)."""
    verdict = doc.get("verdict", UNKNOWN)
    if doc.get("clock") == VIRTUAL:
        return f"{verdict}: {'; '.join(doc.get('reasons') or ())}"
    if verdict not in (VALID, HOST_BOUND):
        return f"{verdict}: {'; '.join(doc.get('reasons') or ())}"
    b = Bounds(**{k: float(v) for k, v in (doc.get("bounds") or {}).items() if k in Bounds.model_fields})
    explained, share = doc.get("explained_ms"), doc.get("explained_share")
    lagging = float(doc.get("lagging_periods") or 0.0)
    cpu = doc.get("cpu") or {}
    sat = cpu.get("host_saturation_mean")
    a, b_met, c = criteria_met(explained, share, lagging, sat, b)
    lag = f"{lagging:.1%} of broker periods lagged > {b.lag_bound_ms:g} ms (bound {b.lag_periods_max:.0%})"
    load = "" if sat is None else f"the run used {sat:.0%} of {cpu.get('cores')} cores"
    load += f" (bound {b.cpu_saturation_max:.0%})" if load else ""
    if verdict == VALID:
        parts = [_explained_clause(explained, share, b, met=False), lag, load]
        return "valid: " + "; ".join(p for p in parts if p)
    met = [
        text
        for ok, text in ((a, _explained_clause(explained, share, b, met=True)), (b_met, lag), (c, load))
        if ok
    ]
    text = "HOST-BOUND: " + "; ".join(met)
    if doc.get("suggested_time_scale") is not None:
        text += f"; suggested time_scale >= {doc['suggested_time_scale']:g}"
    return text + "; see report"


def _explained_clause(explained: float | None, share: float | None, b: Bounds, met: bool) -> str:
    """Criterion A in words. The waits are an estimate from above: a valid run's share is "at most"
    that, a host-bound run's "up to"; an estimate beyond the whole delay says "all of it". A valid run
    whose share is over the bound is valid because the waits stay under ``lag_bound_ms``: it says so."""
    if explained is None or not share:
        return ""
    of = f"of the {explained / share:.1f} ms mean delay"
    if met and share >= 1.0:
        return f"host load could explain all {of} (an estimated {explained:.1f} ms of waits)"
    if met:
        return f"host load explains up to {share:.0%} {of} (bound {b.delay_share_max:.0%})"
    if share >= b.delay_share_max:
        return (
            f"host load adds at most {explained:.1f} ms to a delivery, under the {b.lag_bound_ms:g} ms "
            "of an event loop's normal lateness"
        )
    return f"host load explains at most {share:.0%} {of} (bound {b.delay_share_max:.0%})"


def assess(
    samples: Sequence[LoopSample],
    window: Window | None,
    delay: Delay,
    cores: int | None,
    time_scale: float = 1.0,
    bounds: Bounds | None = None,
    clients: Sequence[LoopSample] = (),
) -> Validity:
    """The validity of one run from its brokers' ``loop`` events and its client processes'
    ``client_loop`` events (any order) and what it measured."""
    bounds = bounds if bounds is not None else Bounds()
    inside = [s for s in samples if window is None or window.holds(s.ts_ns)]
    if not inside:
        why = "no loop events in the measurement window" if samples else "no loop events in the logs"
        return _unknown(why, window, delay, time_scale, bounds)
    client_in = [s for s in clients if window is None or window.holds(s.ts_ns)]
    lag_mean = sum(s.lag_ms_mean for s in inside) / len(inside)
    over = [s for s in inside if s.lag_ms_max > bounds.lag_bound_ms]
    lagging = len(over) / len(inside)
    send_mean = float(delay.send_lag_ms.get("mean") or 0.0)
    client = _clients(client_in, window, cores, bounds)
    explained = (delay.hops_mean + 1.0) * bounds.waits_per_hop * lag_mean + send_mean
    explained += float(client.get("lag_ms_mean") or 0.0)
    share = explained / delay.mean_ms if delay.mean_ms else None
    cpu = _cpu(inside, window, cores, client)
    reasons, bound = _criteria(lag_mean, lagging, explained, share, cpu, client, delay, bounds)
    suggested = _suggest(cpu, time_scale, bounds)
    if bound and (suggested is None or suggested <= time_scale):
        suggested = None
        reasons.append(
            "the run's own CPU demand (brokers and clients), averaged over the window, is within the "
            "target utilisation: the lag comes from other work on the host or from bursts of the run's "
            "own that the average hides, so no time_scale follows from the demand"
        )
    return Validity(
        verdict=HOST_BOUND if bound else VALID,
        reasons=reasons,
        window=_window_json(window),
        loop_lag_ms={
            "mean": lag_mean,
            "max": max(s.lag_ms_max for s in inside),
            "periods": len(inside),
            "lagging_periods": len(over),
        },
        lagging_periods=lagging,
        explained_ms=explained,
        explained_share=share,
        send_lag_ms=dict(delay.send_lag_ms),
        cpu=cpu,
        clients=client,
        brokers=_brokers(inside, bounds),
        windows=_windows(inside, window, bounds),
        time_scale=time_scale,
        suggested_time_scale=suggested,
        bounds=bounds.model_dump(),
    )


def _criteria(
    lag_mean: float,
    lagging: float,
    explained: float,
    share: float | None,
    cpu: dict[str, Any],
    client: dict[str, Any],
    delay: Delay,
    b: Bounds,
) -> tuple[list[str], bool]:
    """The reasons, one per criterion (met or not), and whether any was met."""
    shared = share is not None and share >= b.delay_share_max
    sat = cpu.get("host_saturation_mean")
    a, b_met, c = criteria_met(explained, share, lagging, sat, b)
    mean = f"{delay.mean_ms:.1f} ms" if delay.mean_ms is not None else "n/a"
    reasons = [
        f"loop lag explains {explained:.1f} ms of the {mean} mean delay"
        + (f" ({share:.0%} {'>=' if shared else '<'} {b.delay_share_max:.0%}" if share is not None else " (")
        + f", {'>=' if explained >= b.lag_bound_ms else '<'} {b.lag_bound_ms:g} ms)"
        + f" [mean lag {lag_mean:.2f} ms x {b.waits_per_hop:g} waits x (hops {delay.hops_mean:.2f} + 1)"
        + f" + send lag {float(delay.send_lag_ms.get('mean') or 0.0):.1f} ms"
        + f" + client lag {float(client.get('lag_ms_mean') or 0.0):.2f} ms]",
        f"{lagging:.1%} of broker periods lagged > {b.lag_bound_ms:g} ms "
        f"({'>=' if lagging >= b.lag_periods_max else '<'} {b.lag_periods_max:.0%})",
    ]
    if cpu.get("run_queue_wait") is not None:
        reasons.append(f"broker loops waited for a core {cpu['run_queue_wait']:.1%} of the time")
    if client:
        reasons.append(
            f"client processes' loops lagged {client['lag_ms_mean']:.2f} ms on average, "
            f"> {b.lag_bound_ms:g} ms in {client['lagging_periods']:.1%} of their periods"
        )
    if sat is not None:
        clients = f" + clients {cpu['client_saturation_mean']:.0%}" if client else ""
        reasons.append(
            f"brokers used {cpu['saturation_mean']:.0%}{clients} of {cpu['cores']} cores "
            f"({'>=' if c else '<'} {b.cpu_saturation_max:.0%})"
        )
    return reasons, a or b_met or c


def _clients(
    inside: Sequence[LoopSample], window: Window | None, cores: int | None, b: Bounds
) -> dict[str, Any]:
    """The client processes' loop lag and CPU in the window; empty without ``client_loop`` events."""
    if not inside:
        return {}
    cpu_s = sum(s.cpu * s.wall_ms / 1000.0 for s in inside)
    measured = _spans(inside, window)[1]
    return {
        "processes": len({s.node for s in inside}),
        "lag_ms_mean": sum(s.lag_ms_mean for s in inside) / len(inside),
        "lag_ms_max": max(s.lag_ms_max for s in inside),
        "lagging_periods": sum(s.lag_ms_max > b.lag_bound_ms for s in inside) / len(inside),
        "cpu_s": cpu_s,
        "saturation_mean": cpu_s / measured / cores if cores and measured > 0 else None,
    }


def _spans(inside: Sequence[LoopSample], window: Window | None) -> tuple[float, float]:
    """(intended publish span, measured window) in seconds; without a window, the samples' span."""
    if window is not None:
        return window.intended_span_s, (window.end_ns - window.start_ns) / 1e9
    ts = [s.ts_ns for s in inside]
    span = (max(ts) - min(ts)) / 1e9
    return span, span


def _cpu(
    inside: Sequence[LoopSample], window: Window | None, cores: int | None, client: Mapping[str, Any]
) -> dict[str, Any]:
    """CPU seconds per broker in the window, their demand over the intended span, host saturation
    (brokers and clients)."""
    cpu_s: dict[str, float] = defaultdict(float)
    for s in inside:
        cpu_s[s.node] += s.cpu * s.wall_ms / 1000.0
    span, measured = _spans(inside, window)
    total = sum(cpu_s.values())
    client_s = float(client.get("cpu_s") or 0.0)
    waited = [s for s in inside if s.wait_ms is not None]
    wait_share = sum(s.wait_ms or 0.0 for s in waited) / sum(s.wall_ms for s in waited) if waited else None
    hottest = max(cpu_s, key=lambda n: cpu_s[n])
    out: dict[str, Any] = {
        "cores": cores,
        "broker_cpu_s": total,
        "hottest_broker": hottest,
        "hottest_demand": cpu_s[hottest] / span if span > 0 else None,
        "saturation_mean": None,
        "client_saturation_mean": None,
        "host_saturation_mean": None,
        "saturation_peak": None,
        "demand": None,
        "run_queue_wait": wait_share,  # share of the window a broker's loop thread waited for a core
    }
    if cores and measured > 0 and span > 0:
        out["saturation_mean"] = total / measured / cores
        out["client_saturation_mean"] = client_s / measured / cores
        out["host_saturation_mean"] = (total + client_s) / measured / cores
        out["saturation_peak"] = _peak(inside) / cores
        out["demand"] = (total + client_s) / span / cores
    return out


def _peak(inside: Sequence[LoopSample]) -> float:
    """The largest summed CPU share over the brokers in one time bin."""
    return max(r["cpu_sum"] for r in lag_series(inside, min(s.ts_ns for s in inside)))


def _suggest(cpu: dict[str, Any], time_scale: float, b: Bounds) -> float | None:
    needs = [d for d in (cpu.get("demand"), cpu.get("hottest_demand")) if d is not None]
    if not needs or max(needs) <= 0:
        return None
    return _round_up(time_scale * max(needs) / b.target_utilisation)


def _round_up(x: float, digits: int = 2) -> float:
    """``x`` rounded up to ``digits`` significant digits (3.712 → 3.8, 0.0412 → 0.042)."""
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(x)))
    return math.ceil(round(x * scale, 9)) / scale


def _brokers(inside: Sequence[LoopSample], b: Bounds) -> list[dict[str, Any]]:
    """The brokers whose own share of lagging periods reaches ``lag_periods_max``, worst first."""
    by_node: dict[str, list[LoopSample]] = defaultdict(list)
    for s in inside:
        by_node[s.node].append(s)
    rows: list[dict[str, Any]] = []
    for node, ss in by_node.items():
        share = sum(s.lag_ms_max > b.lag_bound_ms for s in ss) / len(ss)
        if share >= b.lag_periods_max:
            rows.append(
                {
                    "node": node,
                    "lagging_periods": share,
                    "lag_ms_max": max(s.lag_ms_max for s in ss),
                    "lag_ms_mean": sum(s.lag_ms_mean for s in ss) / len(ss),
                    "cpu_mean": sum(s.cpu for s in ss) / len(ss),
                }
            )
    rows.sort(key=lambda r: (-float(r["lagging_periods"]), -float(r["lag_ms_max"]), str(r["node"])))
    return rows[:MAX_BROKERS_LISTED]


def _windows(inside: Sequence[LoopSample], window: Window | None, b: Bounds) -> list[dict[str, float]]:
    """Runs of ``WINDOW_BIN_S`` bins in which ``lag_periods_max`` of the periods lagged, in seconds
    from the window's start."""
    origin = window.start_ns if window is not None else min(s.ts_ns for s in inside)
    bins: dict[int, list[bool]] = defaultdict(list)
    for s in inside:
        bins[int((s.ts_ns - origin) // (WINDOW_BIN_S * 1e9))].append(s.lag_ms_max > b.lag_bound_ms)
    hot = sorted(k for k, v in bins.items() if sum(v) / len(v) >= b.lag_periods_max)
    out: list[dict[str, float]] = []
    for k in hot:
        if out and out[-1]["end_s"] == k * WINDOW_BIN_S:
            out[-1]["end_s"] = (k + 1) * WINDOW_BIN_S
        else:
            out.append({"start_s": k * WINDOW_BIN_S, "end_s": (k + 1) * WINDOW_BIN_S})
    return out


def _window_json(window: Window | None) -> dict[str, Any]:
    if window is None:
        return {}
    return {
        "start_ns": window.start_ns,
        "end_ns": window.end_ns,
        "seconds": (window.end_ns - window.start_ns) / 1e9,
        "intended_s": window.intended_span_s,
    }


def virtual(window: Window | None, delay: Delay, time_scale: float, b: Bounds) -> Validity:
    """A run in virtual time (the sim backend): valid by construction, since no host shares its clock."""
    why = "virtual time (sim backend): the delays come from the time model alone, no host shares its clock"
    return dataclasses.replace(_unknown(why, window, delay, time_scale, b), verdict=VALID, clock=VIRTUAL)


def _unknown(why: str, window: Window | None, delay: Delay, time_scale: float, b: Bounds) -> Validity:
    return Validity(
        verdict=UNKNOWN,
        reasons=[why],
        window=_window_json(window),
        loop_lag_ms={},
        lagging_periods=0.0,
        explained_ms=None,
        explained_share=None,
        send_lag_ms=dict(delay.send_lag_ms),
        cpu={},
        clients={},
        brokers=[],
        windows=[],
        time_scale=time_scale,
        suggested_time_scale=None,
        bounds=b.model_dump(),
    )


def cores_of(spec: Spec, provenance: Mapping[str, Any]) -> int | None:
    """The host's cores the run recorded (its provenance's ``host.cpus``); None on k8s, where brokers
    span hosts."""
    if spec.backend == "k8s":
        return None
    cpus = (provenance.get("host") or {}).get("cpus")
    return int(cpus) if cpus else None


def lag_series(samples: Sequence[LoopSample], origin_ns: int) -> list[dict[str, float]]:
    """Per ``WINDOW_BIN_S`` bin from ``origin_ns``: the worst and the mean loop lag over the brokers and
    their summed CPU share (each broker's mean in the bin), for the report's plot beside the delays."""
    per_bin: dict[int, list[LoopSample]] = defaultdict(list)
    for s in samples:
        per_bin[int((s.ts_ns - origin_ns) // (WINDOW_BIN_S * 1e9))].append(s)
    rows = []
    for k in sorted(per_bin):
        ss = per_bin[k]
        cpu: dict[str, list[float]] = defaultdict(list)
        for s in ss:
            cpu[s.node].append(s.cpu)
        rows.append(
            {
                "t_s": k * WINDOW_BIN_S,
                "lag_ms_max": max(s.lag_ms_max for s in ss),
                "lag_ms_mean": sum(s.lag_ms_mean for s in ss) / len(ss),
                "cpu_sum": sum(sum(v) / len(v) for v in cpu.values()),
            }
        )
    return rows


#: the exit status of a correct run or analysis that is host-bound, under ``--require-valid``
EXIT_HOST_BOUND = 5


def exit_status(correct_status: int, validity: Mapping[str, Any] | None, require_valid: bool) -> int:
    """The exit status of a run or an analysis: a failed check's (``correct_status`` not 0) comes
    first; with ``require_valid`` a host-bound run then exits :data:`EXIT_HOST_BOUND`. A run whose
    validity is unknown is not gated: nothing says its host was busy."""
    if correct_status != 0 or not require_valid:
        return correct_status
    return EXIT_HOST_BOUND if (validity or {}).get("verdict") == HOST_BOUND else 0
