"""Routing plug-ins by spec name; one module per algorithm, imported on demand."""

from __future__ import annotations

import importlib

from scotbed.broker.routing.base import BrokerView, RoutingAlgorithm

ALGORITHMS: dict[str, str] = {
    "flooding": "scotbed.broker.routing.flooding:Flooding",
    "rpf": "scotbed.broker.routing.rpf:ReversePathForwarding",
    "covering-active": "scotbed.broker.routing.covering:ActiveCovering",
    "covering-lazy": "scotbed.broker.routing.covering:LazyCovering",
    "covering-packing": "scotbed.broker.routing.covering:PackingCovering",
    "bid": "scotbed.broker.routing.bid:BidRouting",
    "snr": "scotbed.broker.routing.octopis:StaticNotificationRouting",
    "dnr": "scotbed.broker.routing.octopis:DynamicNotificationRouting",
    "link-matching": "scotbed.broker.routing.link_matching:LinkMatching",
}


def implemented() -> list[str]:
    """The algorithm names this build can run (their module is present)."""
    import importlib.util

    return [n for n, t in ALGORITHMS.items() if importlib.util.find_spec(t.split(":")[0]) is not None]


def algorithm_class(name: str) -> type[RoutingAlgorithm]:
    try:
        target = ALGORITHMS[name]
    except KeyError:
        raise ValueError(
            f"routing algorithm {name!r} is not implemented; available: {', '.join(ALGORITHMS)}"
        ) from None
    module, cls = target.split(":")
    algo: type[RoutingAlgorithm] = getattr(importlib.import_module(module), cls)
    return algo


def make_algorithm(name: str, view: BrokerView) -> RoutingAlgorithm:
    return algorithm_class(name)(view)
