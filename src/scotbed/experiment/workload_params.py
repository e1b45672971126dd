"""The workload parameters, typed: what :func:`scotbed.workloads.plan.build_plan` builds a plan from.

The orchestrator fills one :class:`WorkloadParams` from the spec's ``workload:`` block
(docs/design.md §4), where every default and every single-value check lives; the cross-field rules
of a workload live here (:meth:`WorkloadParams.problems`) and the spec's checks call them,
so the plan builder trusts what it gets. Units as in the spec: rates per minute, times in
seconds (before ``time_scale``), ``covering.degree`` in percent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class CoveringParams:
    degree: float  # percent of subscriptions covered by a root subscription


@dataclass(frozen=True)
class HrpParams:
    rate_per_minute: float
    notifications: int
    start_s: float
    interested_fraction: float


@dataclass(frozen=True)
class ChurnParams:
    rate_per_minute: float
    mobility: Literal["none", "region", "cluster"]
    start_s: float
    duration_s: float | None  # None: until the last publication
    away_s: float


@dataclass(frozen=True)
class UnsubBurstParams:
    count: int
    interval_ms: float
    start_s: float


@dataclass(frozen=True)
class GryphonParams:
    """Gryphon's enumerated-equality workload (schema ``gryphon``): see :mod:`scotbed.workloads.gryphon`."""

    attributes: int
    values: int
    zipf_s: float
    matching: float  # target fraction of subscriptions a notification matches
    dont_care: float | None  # fixed don't-care probability; None: calibrated to ``matching``
    subscriptions_per_client: int


@dataclass(frozen=True)
class WorkloadParams:
    schema: str
    gryphon: GryphonParams | None  # set exactly when schema is gryphon
    symbols: int
    zipf_s: float
    csv: tuple[str, ...]  # absolute paths of daily-quote CSV files; empty = the synthetic market
    subscribers: int
    selectivity: float
    covering: CoveringParams | None
    publishers: int
    notifications_per_publisher: int
    rate_per_minute: float
    start_spread_s: float
    hrp: HrpParams | None
    churn: ChurnParams | None
    unsub_burst: UnsubBurstParams | None
    time_scale: float
    drain_s: float

    def problems(self, clusters: int) -> list[str]:
        """The workload's cross-field rules, one ``workload.key: message`` line each, on an overlay
        of ``clusters`` clusters."""
        out = []
        if self.gryphon is not None and self.schema != "gryphon":
            out.append("workload.gryphon: only with schema: gryphon")
        if self.schema == "gryphon" and self.covering is not None:
            out.append("workload.covering: not with schema: gryphon")
        if self.unsub_burst is not None and self.covering is None:
            out.append(
                "workload.unsub_burst: needs workload.covering "
                "(the burst removes covering root subscriptions)"
            )
        if self.churn is not None and self.churn.mobility == "region" and clusters < 2:
            out.append(
                "workload.churn.mobility: 'region' needs a SCOT with connectivity >= 2 "
                "(a region of one broker)"
            )
        if self.hrp is not None and self.covering is not None:
            out.append(
                "workload.covering: covering filters constrain no symbol, so they would match the HRP's "
                "private quotes; use either hrp or covering"
            )
        if self.hrp is not None and self.subscribers == 0 and self.hrp.interested_fraction > 0:
            out.append("workload.hrp.interested_fraction: there are no subscribers (workload.subscribers: 0)")
        return out
