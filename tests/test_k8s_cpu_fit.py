"""The CPU requests that fit a cluster: quantities, free CPU on schedulable nodes, one fitted request."""

from __future__ import annotations

from typing import Any

from scotbed.orchestrator.backends.k8s.cpu_fit import FLOOR_M, fitted_request, free_millicores, millicores


def node(name: str, cpu: str, taint: str | None = None, unschedulable: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"unschedulable": unschedulable}
    if taint:
        spec["taints"] = [{"key": "k", "value": "v", "effect": taint}]
    return {"metadata": {"name": name}, "spec": spec, "status": {"allocatable": {"cpu": cpu}}}


def pod(on: str, *cpus: str, phase: str = "Running") -> dict[str, Any]:
    containers = [{"resources": {"requests": {"cpu": c}}} for c in cpus] + [{"resources": {}}]
    return {"spec": {"nodeName": on, "containers": containers}, "status": {"phase": phase}}


def test_quantities_in_millicores() -> None:
    assert [millicores(q) for q in ("2", "1900m", "0.5", "0.0011", " 250m ")] == [2000, 1900, 500, 2, 250]


def test_free_cpu_counts_only_nodes_an_untolerating_pod_can_use_and_their_live_pods() -> None:
    nodes = [
        node("real", "2"),
        node("fake", "4", taint="NoSchedule"),
        node("cordoned", "8", unschedulable=True),
        node("soft", "1", taint="PreferNoSchedule"),
    ]
    pods = [
        pod("real", "100m", "250m"),
        pod("real", "1", phase="Succeeded"),
        pod("fake", "3"),
        pod("soft", "0.1"),
    ]
    assert free_millicores(nodes, pods) == 2000 + 1000 - 350 - 100


def test_the_defaults_stay_when_they_fit() -> None:
    assert fitted_request([100] * 18 + [500] * 3, free_m=4000) is None
    assert fitted_request([], free_m=0) is None


def test_the_quickstart_on_one_two_core_node_gets_one_request_that_fits() -> None:
    fit = fitted_request([100] * 18 + [500] * 3, free_m=1850)
    assert fit is not None
    assert fit.request_m == int(1850 * 0.9) // 21 == 79
    assert fit.request_m * 21 <= 1850 and fit.needed_m == 3300 and fit.quantity == "79m"
    assert "3.3 CPUs" in fit.describe() and "1.85 free" in fit.describe()


def test_a_full_cluster_gets_the_floor() -> None:
    fit = fitted_request([100] * 10, free_m=0)
    assert fit is not None and fit.request_m == FLOOR_M
