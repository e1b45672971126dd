"""Small pure statistics the analysis needs: t and bootstrap intervals, burst recovery, flattening.

No Spark and no I/O here: everything takes plain Python or pandas values, so
each function is tested with plain asserts on a known answer.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as scipy_stats


@dataclass(frozen=True)
class MeanCI:
    """A mean over ``n`` values with a two-sided interval; ``low``/``high`` are NaN when there is
    none (one value, or no values). ``method`` says how the interval was computed."""

    n: int
    mean: float
    low: float
    high: float
    method: str = "t"

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    @property
    def has_interval(self) -> bool:
        return not math.isnan(self.low)


#: the fewest values a bootstrap interval is computed from; below it the t interval stands
BOOTSTRAP_MIN_N = 5
BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 0  # the same values always give the same interval


def _finite(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]


def mean_ci(values: Sequence[float | None], level: float = 0.95) -> MeanCI:
    """Mean with a two-sided Student-t interval (``scipy.stats.t``); one value has no interval.

    Values without spread (all equal) give a zero-width interval, which is what the data say.
    """
    xs = _finite(values)
    n = len(xs)
    if n == 0:
        return MeanCI(0, math.nan, math.nan, math.nan, "none")
    mean = float(np.mean(xs))
    if n == 1:
        return MeanCI(1, mean, math.nan, math.nan, "none")
    sem = float(scipy_stats.sem(xs))
    if sem == 0.0:
        return MeanCI(n, mean, mean, mean, "t")
    low, high = scipy_stats.t.interval(level, n - 1, loc=mean, scale=sem)
    return MeanCI(n, mean, float(low), float(high), "t")


def bootstrap_mean_ci(values: Sequence[float | None], level: float = 0.95) -> MeanCI:
    """Mean with a percentile bootstrap interval (``scipy.stats.bootstrap``, seeded) from
    :data:`BOOTSTRAP_MIN_N` values on; fewer values get :func:`mean_ci`'s t interval.

    For statistics that are themselves percentiles (a run's p99 delay), whose spread across
    repetitions is rarely normal enough for a t interval.
    """
    xs = _finite(values)
    if len(xs) < BOOTSTRAP_MIN_N:
        return mean_ci(xs, level)
    mean = float(np.mean(xs))
    if float(np.ptp(xs)) == 0.0:
        return MeanCI(len(xs), mean, mean, mean, "bootstrap")
    res = scipy_stats.bootstrap(
        (np.asarray(xs),),
        np.mean,
        confidence_level=level,
        n_resamples=BOOTSTRAP_RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(BOOTSTRAP_SEED),
    )
    ci = res.confidence_interval
    return MeanCI(len(xs), mean, float(ci.low), float(ci.high), "bootstrap")


@dataclass(frozen=True)
class Recovery:
    """Outcome of :func:`time_to_stabilise`; times in ns, delays in ms."""

    pre_burst_ms: float | None
    bound_ms: float | None
    stabilised_at_ns: int | None
    time_to_stabilise_s: float | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "pre_burst_ms": self.pre_burst_ms,
            "bound_ms": self.bound_ms,
            "stabilised_at_ns": self.stabilised_at_ns,
            "time_to_stabilise_s": self.time_to_stabilise_s,
            "reason": self.reason,
        }


# The recovery bound: a window is "back to normal" when its maximum delay is at most
# (1 + RECOVERY_TOLERANCE) times the pre-burst level plus RECOVERY_SLACK_MS. The slack
# keeps a near-zero pre-burst level (an idle local run) from making recovery impossible.
RECOVERY_TOLERANCE = 0.5  # report.html.j2 states this bound in words; keep the two in step
RECOVERY_SLACK_MS = 10.0


def time_to_stabilise(
    windows: Iterable[Mapping[str, Any]],
    burst_start_ns: int,
    burst_end_ns: int,
    tolerance: float = RECOVERY_TOLERANCE,
    slack_ms: float = RECOVERY_SLACK_MS,
) -> Recovery:
    """Time from the burst's end until the first stability window that is back to normal.

    ``windows`` are the stability-curve rows (``start_ns``, ``end_ns``, ``max_delay_ms``) in
    time order. The pre-burst level is the largest window maximum among windows that ended
    before the burst started. Only windows that *start* after the burst's end count as
    recovered, so a window mixing burst and post-burst traffic never does.
    """
    rows = list(windows)
    pre = [float(w["max_delay_ms"]) for w in rows if int(w["end_ns"]) < burst_start_ns]
    if not pre:
        return Recovery(None, None, None, None, "no complete window before the burst")
    level = max(pre)
    bound = level * (1 + tolerance) + slack_ms
    for w in rows:
        if int(w["start_ns"]) >= burst_end_ns and float(w["max_delay_ms"]) <= bound:
            at = int(w["end_ns"])
            return Recovery(level, bound, at, (at - burst_end_ns) / 1e9, "stabilised")
    return Recovery(level, bound, None, None, "never back within the bound after the burst")


def flatten(doc: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; lists stay values."""
    out: dict[str, Any] = {}
    for k, v in doc.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def dist_from_quantiles(count: int, mean: float | None, qs: Sequence[float | None], mx: float | None) -> dict:
    """The summary.json shape of a distribution: mean, p50, p90, p99, max (0 when empty)."""
    if count == 0:
        return {"count": 0, "mean": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}
    p50, p90, p99 = (float(q) if q is not None else 0.0 for q in qs)
    return {
        "count": int(count),
        "mean": float(mean or 0.0),
        "p50": p50,
        "p90": p90,
        "p99": p99,
        "max": float(mx or 0.0),
    }


def rank_quantiles(values: Sequence[float] | np.ndarray, quantiles: Sequence[float]) -> list[float | None]:
    """Each quantile q as the value of rank ceil(q·n) among the sorted values (None when empty).

    This is what Spark's ``percentile_approx`` returns while its summary is still exact (fewer values
    than half its accuracy: no two samples merged), so a small run can compute it without Spark.
    """
    xs = np.sort(np.asarray(values, dtype=float))
    return [float(xs[max(math.ceil(q * len(xs)), 1) - 1]) if len(xs) else None for q in quantiles]
