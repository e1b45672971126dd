"""Every decision the topology manager makes, as a record with the inputs it was made from.

Records are plain data so a broker can log them as events and a test can compare them exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EVALUATE = "evaluate"  # Eq. 5/7 or a baseline's request rule, at the broker that got the broadcast
AGREE = "agree"  # one broker's step of the consensus (Eq. 8) along the request path
SWAP = "swap"  # the committed reconfiguration: add e_n, remove e_r


@dataclass(frozen=True)
class Knobs:
    """Damping against oscillation (off by default): a relative margin and a per-broker pause."""

    hysteresis: float = 0.0  # request only if the gain exceeds this fraction of the current cost
    cooldown: float = 0.0  # time units a broker waits after a swap it took part in

    def __post_init__(self) -> None:
        if not 0 <= self.hysteresis < 1:
            raise ValueError(f"hysteresis must be in [0, 1), got {self.hysteresis}")
        if self.cooldown < 0:
            raise ValueError(f"cooldown must be >= 0, got {self.cooldown}")


@dataclass(frozen=True)
class Decision:
    """What ``broker`` decided (``outcome``) in phase ``kind``, why, and from which inputs."""

    kind: str
    broker: str
    heuristic: str
    outcome: str
    reason: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    time: float = 0.0


NO_KNOBS = Knobs()
