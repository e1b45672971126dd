"""What a routing plug-in sees of a broker (``BrokerView``), built from its config: shared by the broker
process (:mod:`scotbed.broker.runtime`) and the sim backend, which differ only in where the link status
and the time come from."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scotbed.config import BrokerConfig, NeighbourConfig
from scotbed.matching import Matcher, make_matcher
from scotbed.routing.base import LinkState


class ConfigView:
    """A :class:`~scotbed.routing.base.BrokerView` over ``cfg``; ``link_state`` and ``clock`` are the
    broker's (the runtime's or the simulator's)."""

    def __init__(
        self, cfg: BrokerConfig, link_state: Callable[[str], LinkState], clock: Callable[[], float]
    ) -> None:
        self.id = cfg.id
        self.vertex = cfg.vertex
        self.cluster = cfg.cluster
        self.type = cfg.type
        self.clusters = cfg.clusters
        self.neighbours: dict[str, NeighbourConfig] = {n.id: n for n in cfg.neighbours}  # changed by relink
        self.params: Mapping[str, Any] = cfg.routing_params
        self._matching = cfg.matching
        self._link_state = link_state
        self._clock = clock

    def link_state(self, neighbour: str) -> LinkState:
        return self._link_state(neighbour)

    def make_matcher(self) -> Matcher:
        return make_matcher(self._matching)

    def clock(self) -> float:
        return self._clock()
