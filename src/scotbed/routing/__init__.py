"""The routing algorithm registry: the one module that names the algorithms (docs/design.md §1).

Adding an algorithm is one new module with a :class:`~scotbed.routing.base.RoutingAlgorithm`
subclass (declaring its overlay requirements and its parameters with defaults) plus one line in
:data:`ALGORITHMS`. The spec's checks, the broker config's checks and the CLI's lists all derive
from here. A name whose module is absent is known but not implemented in this build: the spec
refuses it by name and lists what is implemented.

The plug-ins are part of the shared core: they import only the core (filters, matching, messages,
topology, config), never the broker's runtime, so the broker, the in-process simulator
(:mod:`scotbed.broker.sim`) and the orchestrator's checks run the same code. This module loads no
plug-in at import time.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scotbed.routing.base import BrokerView, RoutingAlgorithm

#: spec name -> "module:Class", in the order the CLI and error messages list them
ALGORITHMS: dict[str, str] = {
    "flooding": "scotbed.routing.flooding:Flooding",
    "rpf": "scotbed.routing.rpf:ReversePathForwarding",
    "covering-active": "scotbed.routing.covering:ActiveCovering",
    "covering-lazy": "scotbed.routing.covering:LazyCovering",
    "covering-packing": "scotbed.routing.covering:PackingCovering",
    "selective-pruning": "scotbed.routing.selective_pruning:SelectivePruning",
    "bid": "scotbed.routing.bid:BidRouting",
    "snr": "scotbed.routing.octopis:StaticNotificationRouting",
    "dnr": "scotbed.routing.octopis:DynamicNotificationRouting",
    "link-matching": "scotbed.routing.link_matching:LinkMatching",
}
#: peer algorithms (docs/design.md §10): spec name -> "module:Class" of the peer state machine; they run on
#: ``topology: {kind: peers}`` only, in peer processes (scotbed.vinifera.process), never in brokers
PEER_ALGORITHMS: dict[str, str] = {
    "vinifera": "scotbed.vinifera.peer:Peer",
    "rendezvous-baseline": "scotbed.vinifera.baseline:BaselinePeer",
}
#: the peer algorithm of a ``kind: peers`` topology without ``routing``
DEFAULT_PEER_ROUTING = "vinifera"
#: the spec's default algorithm
DEFAULT_ROUTING = "snr"
#: the broker config's default algorithm (a config written by hand for a tree)
DEFAULT_BROKER_ROUTING = "rpf"
#: the algorithm without routing state: the baseline that every overlay can run
BASELINE_ROUTING = "flooding"
#: the Gryphon link matching (its matching steps are computed by scotbed.analysis.link_matching_steps)
LINK_MATCHING = "link-matching"


def implemented() -> list[str]:
    """The algorithm names this build can run (their module is present)."""
    return [n for n, t in ALGORITHMS.items() if importlib.util.find_spec(t.split(":")[0]) is not None]


def algorithm_class(name: str) -> type[RoutingAlgorithm]:
    """The plug-in class registered under ``name``; its ``name`` attribute is set from here."""
    try:
        target = ALGORITHMS[name]
    except KeyError:
        raise ValueError(
            f"routing algorithm {name!r} is not implemented; available: {', '.join(implemented())}"
        ) from None
    module, cls = target.split(":")
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        raise ValueError(
            f"routing algorithm {name!r} is not implemented in this build; "
            f"implemented: {', '.join(implemented())}"
        ) from None
    algo: type[RoutingAlgorithm] = getattr(loaded, cls)
    algo.name = name
    return algo


def check_params(name: str, params: Mapping[str, Any]) -> list[str]:
    """One ``key: message`` problem per parameter ``name`` does not declare or gets with a wrong type."""
    declared = algorithm_class(name).params
    problems = []
    for key, value in params.items():
        if key not in declared:
            allowed = ", ".join(declared) or "none"
            problems.append(f"{key}: {name!r} has no parameter {key!r}; its parameters: {allowed}")
            continue
        want = type(declared[key])
        ok = isinstance(value, want) or (want is float and isinstance(value, int))
        if isinstance(value, bool) and want is not bool:
            ok = False
        if not ok:
            expected = f"expected {want.__name__} (default {declared[key]!r})"
            problems.append(f"{key}: {value!r} is not allowed; {expected}")
    return problems


def make_algorithm(name: str, view: BrokerView) -> RoutingAlgorithm:
    return algorithm_class(name)(view)


def peer_class(name: str) -> Any:
    """The peer state machine class registered under ``name`` in :data:`PEER_ALGORITHMS`."""
    try:
        module, cls = PEER_ALGORITHMS[name].split(":")
    except KeyError:
        raise ValueError(
            f"peer algorithm {name!r} is unknown; available: {', '.join(PEER_ALGORITHMS)}"
        ) from None
    return getattr(importlib.import_module(module), cls)
