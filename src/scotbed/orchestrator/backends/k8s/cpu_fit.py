"""CPU requests that fit the cluster: the pods' default requests, or one smaller request for every pod.

A broker pod asks for 100m and a Locust pod for 500m (the renderers' defaults): the quickstart's 18
brokers and three Locust pods need 3.3 CPUs, more than a 2-core machine's one node offers, and pods
that do not fit stay Pending. When the run gives no ``--pod-cpu``, :func:`fitted_request` lowers every
pod's request to one value that fits the CPU the schedulable nodes have left (with :data:`HEADROOM`
spare), never below :data:`FLOOR_M`. A request is what the scheduler books, not a limit: the pods may
still use more when the node is idle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

FLOOR_M = 10  # the smallest request given to a pod, in millicores
HEADROOM = 0.9  # the share of the free CPU the run's pods may book


@dataclass(frozen=True)
class CpuFit:
    """The request every pod gets (``request_m``) and why, for the run's output."""

    request_m: int
    needed_m: int
    free_m: int

    @property
    def quantity(self) -> str:
        return f"{self.request_m}m"

    def describe(self) -> str:
        return (
            f"pod CPU requests lowered to {self.quantity} each: the run's pods ask for "
            f"{self.needed_m / 1000:g} CPUs, the schedulable nodes have {self.free_m / 1000:g} free "
            "(--pod-cpu sets the request)"
        )


def millicores(quantity: str) -> int:
    """A Kubernetes CPU quantity (``"2"``, ``"1900m"``, ``"0.5"``) in millicores, rounded up."""
    q = quantity.strip()
    if q.endswith("m"):
        return int(Decimal(q[:-1]).to_integral_value(rounding="ROUND_CEILING"))
    return int((Decimal(q) * 1000).to_integral_value(rounding="ROUND_CEILING"))


def fitted_request(requests_m: Iterable[int], free_m: int) -> CpuFit | None:
    """One request for every pod that fits ``free_m``; None when the default ``requests_m`` fit."""
    asked = list(requests_m)
    needed = sum(asked)
    if not asked or needed <= free_m * HEADROOM:
        return None
    each = max(FLOOR_M, int(free_m * HEADROOM) // len(asked))
    return CpuFit(each, needed, free_m)


def _schedulable(node: Mapping[str, Any]) -> bool:
    spec = node.get("spec") or {}
    if spec.get("unschedulable"):
        return False
    return not any(t.get("effect") in ("NoSchedule", "NoExecute") for t in spec.get("taints") or [])


def free_millicores(nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]) -> int:
    """CPU left on the nodes an untolerating pod can land on: allocatable minus what running pods ask."""
    names, free = set(), 0
    for node in nodes:
        if _schedulable(node):
            names.add(node["metadata"]["name"])
            free += millicores(str(node["status"]["allocatable"]["cpu"]))
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") not in names:
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for c in pod["spec"].get("containers") or []:
            cpu = ((c.get("resources") or {}).get("requests") or {}).get("cpu")
            if cpu is not None:
                free -= millicores(str(cpu))
    return max(0, free)
