"""The spec's cross-field rules: which overlays each routing algorithm runs on, and block consistency.

The models of :mod:`scotbed.experiment.spec` check each value on its own; :func:`check` checks the
values of a parsed spec against each other, and every problem becomes one line of a
:class:`~scotbed.experiment.spec_errors.SpecError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scotbed import bounds
from scotbed import routing as routing_registry
from scotbed import topology as topo
from scotbed.experiment import spec_peers, spec_selforg
from scotbed.experiment.spec_errors import SpecError
from scotbed.experiment.spec_factors import KaryFactor, NamedFactor, PathFactor, RandomFactor, StarFactor
from scotbed.matching import implemented as matching_implemented

if TYPE_CHECKING:
    from scotbed.experiment.spec import Spec


def _factor_size(a: Any) -> int | None:
    if isinstance(a, KaryFactor):
        return (a.fanout ** (a.depth + 1) - 1) // (a.fanout - 1) if a.fanout > 1 else a.depth + 1
    if isinstance(a, PathFactor | StarFactor | RandomFactor):
        return a.n
    if isinstance(a, NamedFactor):
        return len(topo.NAMED_FACTORS[a.kind]().vertices)
    return None


def _routing_problems(spec: Spec, shape: str) -> list[str]:
    """The routing algorithm against the overlay and its parameters, from the plug-in's declarations."""
    t = spec.topology
    implemented = routing_registry.implemented()
    if spec.routing not in implemented:
        return [
            f"routing: {spec.routing!r} is a known algorithm but not implemented in this build; "
            f"implemented: {', '.join(implemented)}"
        ]
    algo = routing_registry.algorithm_class(spec.routing)
    problems = []
    if algo.requires_clusters and (t.kind != "scot" or t.m < 2):
        problems.append(
            f"topology.connectivity: routing {spec.routing!r} needs a SCOT with connectivity >= 2 "
            f"(a CBV needs clusters), but the topology is {shape}"
        )
    if algo.requires_acyclic and t.m != 1:
        problems.append(
            f"topology.connectivity: routing {spec.routing!r} needs an acyclic overlay "
            f"(kind tree, or connectivity 1), but the topology is {shape} which has cycles"
        )
    params = routing_registry.check_params(spec.routing, spec.routing_params)
    problems += [f"routing_params.{p}" for p in params]
    return problems


def _unused_workload_keys(spec: Spec) -> list[str]:
    """Workload keys a script makes meaningless, when the spec sets them too."""
    w = spec.workload
    if w.script is None:
        return []
    fields = type(w).model_fields
    return sorted((fields[n].alias or n) for n in w.model_fields_set if n != "script")


def check(spec: Spec) -> None:
    """Cross-field rules: which overlays each routing algorithm runs on, and block consistency."""
    problems: list[str] = spec_peers.problems(spec)
    t = spec.topology
    if t.kind == spec_peers.PEERS or problems:
        if problems:
            raise SpecError(problems)
        return
    shape = f"{{kind: {t.kind}, connectivity: {t.m}}}"
    if t.kind == "tree" and t.m != 1:
        raise SpecError(
            f"topology.connectivity: {t.m} is not allowed for kind tree (a tree has one cluster); "
            "use kind scot or connectivity 1"
        )
    problems += _routing_problems(spec, shape)
    if spec.matching not in matching_implemented():
        problems.append(
            f"matching: {spec.matching!r} is not implemented in this build; "
            f"implemented: {', '.join(matching_implemented())}"
        )
    size = _factor_size(t.acyclic)
    if size is not None and size * t.m > bounds.MAX_BROKERS:
        problems.append(
            f"topology: {size} vertices × {t.m} clusters = {size * t.m} brokers; "
            f"at most {bounds.MAX_BROKERS} allowed"
        )
    w = spec.workload
    problems += [
        f"workload.{k}: not used with workload.script (the script is the workload)"
        for k in _unused_workload_keys(spec)
    ]
    p = w.placement
    if p.mode == "per-cluster":
        for k, c in enumerate(p.clusters or []):
            if not 0 <= c < t.m:
                problems.append(
                    f"workload.placement.clusters[{k}]: {c} is not a cluster; allowed: 0..{t.m - 1}"
                )
    elif p.clusters is not None:
        problems.append(f"workload.placement.clusters: only used with mode per-cluster, not {p.mode}")
    if p.mode == "explicit" and not p.brokers:
        problems.append("workload.placement.brokers: mode explicit needs a map of client id -> broker id")
    elif p.mode != "explicit" and p.brokers is not None:
        problems.append(f"workload.placement.brokers: only used with mode explicit, not {p.mode}")
    problems += w.params(spec.base_dir).problems(t.m)
    problems += spec_selforg.problems(spec)
    if problems:
        raise SpecError(problems)
