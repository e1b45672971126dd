"""Small pure statistics the analysis needs: Student-t intervals, burst recovery, flattening.

No Spark and no I/O here: everything takes plain Python or pandas values, so
each function is tested with plain asserts on a known answer.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def _t_pdf(x: float, df: int) -> float:
    c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(c - (df + 1) / 2 * math.log1p(x * x / df))


def _t_cdf_upper_half(x: float, df: int, steps: int = 4000) -> float:
    """P(0 <= T <= x) by Simpson's rule on the density (smooth, so this is accurate to ~1e-10)."""
    h = x / steps
    s = _t_pdf(0.0, df) + _t_pdf(x, df)
    for k in range(1, steps):
        s += (4 if k % 2 else 2) * _t_pdf(k * h, df)
    return s * h / 3


def t_quantile(p: float, df: int) -> float:
    """The p-quantile (p > 0.5) of Student's t with ``df`` degrees of freedom (no SciPy needed)."""
    if not 0.5 < p < 1 or df < 1:
        raise ValueError(f"t_quantile needs 0.5 < p < 1 and df >= 1, got p={p}, df={df}")
    target = p - 0.5
    lo, hi = 0.0, 1.0
    while _t_cdf_upper_half(hi, df) < target:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if _t_cdf_upper_half(mid, df) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass(frozen=True)
class MeanCI:
    n: int
    mean: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def mean_ci(values: Sequence[float], level: float = 0.95) -> MeanCI:
    """Mean with a two-sided t confidence interval; one value gives a zero-width interval."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return MeanCI(0, math.nan, math.nan, math.nan)
    mean = sum(xs) / n
    if n == 1:
        return MeanCI(1, mean, mean, mean)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return MeanCI(n, mean, mean - half, mean + half)


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
