"""The spec's ``faults:`` block (one entry per fault), checked value by value.

What the faults mean, their checks against the overlay and their injection are the orchestrator's
(:mod:`scotbed.orchestrator.faults`); this is the entry's shape, part of the spec model.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from scotbed import bounds
from scotbed.config import MAX_LINK_DELAY_MS


class FaultSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    at_s: float = Field(ge=0, le=bounds.MAX_SECONDS, description="seconds after the publishers are released")
    action: Literal["kill", "stop", "restart", "cut", "restore", "capacity", "latency"]
    broker: str
    neighbour: str | None = Field(default=None, description="cut, restore, capacity: the link's other end")
    capacity_msgs_per_s: float | None = Field(
        default=None, ge=0, le=bounds.MAX_RATE_PER_S, description="capacity: the new rate"
    )
    latency_ms: float | None = Field(
        default=None, ge=0, lt=MAX_LINK_DELAY_MS, description="latency: the new delay, ms (below 1 h)"
    )
    jitter_ms: float = Field(
        default=0.0, ge=0, lt=MAX_LINK_DELAY_MS, description="latency: ± this, uniform, ms (below 1 h)"
    )
