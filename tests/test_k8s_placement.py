"""Broker pods on a dedicated node pool: nodeSelector + tolerations, and the nodes the backend counts."""

from __future__ import annotations

import kubernetes_validate
from kubernetes import client as k

from scotbed.experiment.spec import build_scot, parse_spec
from scotbed.orchestrator.backends.k8s import render as k8s
from scotbed.orchestrator.backends.k8s.api import schedulable_nodes
from scotbed.orchestrator.backends.k8s.placement import Placement, tolerates
from scotbed.orchestrator.plan import deployed_configs

TAINT = {"key": "scotbed.io/fake-node", "value": "true", "effect": "NoSchedule"}
POOL = Placement(
    node_selector={"scotbed.io/node-pool": "fake"},
    tolerations=[{"key": TAINT["key"], "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
)


def node(name: str, pool: str, taints: list[dict[str, str]]) -> k.V1Node:
    return k.V1Node(
        metadata=k.V1ObjectMeta(name=name, labels={"scotbed.io/node-pool": pool}),
        spec=k.V1NodeSpec(taints=[k.V1Taint(**t) for t in taints]),
        status=k.V1NodeStatus(conditions=[k.V1NodeCondition(type="Ready", status="True")]),
    )


def test_toleration_matching_follows_kubernetes() -> None:
    assert tolerates({"key": TAINT["key"], "value": "true", "effect": "NoSchedule"}, TAINT)
    assert tolerates({"key": TAINT["key"], "operator": "Exists"}, TAINT)  # any value, any effect
    assert tolerates({"operator": "Exists"}, TAINT)  # empty key + Exists: everything
    assert not tolerates({"key": TAINT["key"], "value": "false"}, TAINT)
    assert not tolerates({"key": TAINT["key"], "value": "true", "effect": "NoExecute"}, TAINT)
    assert not tolerates({"key": "other", "operator": "Exists"}, TAINT)
    assert not tolerates({"value": "true"}, TAINT)  # empty key with Equal matches nothing


def test_the_backend_counts_only_the_nodes_of_the_pool() -> None:
    nodes = [node("real", "real", [])] + [node(f"fake-{i}", "fake", [TAINT]) for i in range(5)]
    assert schedulable_nodes(nodes) == 1  # the default placement cannot use tainted nodes
    assert schedulable_nodes(nodes, POOL) == 5  # the pool's selector excludes the real node
    soft = {**TAINT, "effect": "PreferNoSchedule"}
    assert schedulable_nodes([node("soft", "real", [soft])]) == 1  # a soft taint never blocks


def test_broker_pods_carry_the_placement_and_pass_the_official_schema() -> None:
    spec = parse_spec({"name": "quickstart", "topology": {"acyclic": "paper-fig2", "connectivity": 3}})
    run_id = "q-20250102T030405-0a1b2c3d"
    configs = deployed_configs(spec, build_scot(spec), k8s.addressing(k8s.namespace_for(run_id)), run_id)
    objects = k8s.render_k8s(configs, run_id, placement=POOL)
    pods = [o for o in objects if o["kind"] == "Pod"]
    assert len(pods) == 18
    for pod in pods:
        assert pod["spec"]["nodeSelector"] == {"scotbed.io/node-pool": "fake"}
        assert pod["spec"]["tolerations"] == [dict(POOL.tolerations[0])]
        kubernetes_validate.validate(pod, k8s.KUBERNETES_VERSION, strict=True)
    default = k8s.render_k8s(configs, run_id)
    assert not any("tolerations" in o.get("spec", {}) for o in default if o["kind"] == "Pod")
