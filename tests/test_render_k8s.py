"""Kubernetes manifests: official schemas, anti-affinity = neighbour set, NetworkPolicy, probes."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import kubernetes_validate
import pytest

from scotbed import contract
from scotbed.config import BrokerConfig
from scotbed.experiment.spec import build_scot, parse_spec
from scotbed.orchestrator.backends.k8s import render as k8s
from scotbed.orchestrator.images import BROKER_IMAGE
from scotbed.orchestrator.plan import deployed_configs

RUN_ID = "quickstart-20250102T030405-0a1b2c3d"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def render(
    acyclic: str = "paper-fig2", m: int = 3, metrics: bool = False, **kw: Any
) -> tuple[list[dict[str, Any]], Any]:
    spec = parse_spec(
        {
            "name": "quickstart",
            "topology": {"acyclic": acyclic, "connectivity": m},
            "metrics": {"prometheus": metrics},
        }
    )
    scot = build_scot(spec)
    ns = kw.get("namespace") or k8s.namespace_for(RUN_ID)
    configs = deployed_configs(spec, scot, k8s.addressing(ns, kw.get("port", k8s.DEFAULT_PORT)), RUN_ID)
    return k8s.render_k8s(configs, RUN_ID, **kw), scot


def pods(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod"}


def of_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (obj,) = [o for o in objects if o["kind"] == kind]
    return obj


@pytest.mark.parametrize("version", sorted({k8s.KUBERNETES_VERSION, kubernetes_validate.latest_version()}))
@pytest.mark.parametrize("preferred", [False, True])
def test_every_object_passes_the_official_schema(version: str, preferred: bool) -> None:
    objects, scot = render(preferred_anti_affinity=preferred)
    assert [o["kind"] for o in objects[:4]] == ["Namespace", "ConfigMap", "Service", "NetworkPolicy"]
    assert len(pods(objects)) == len(scot.brokers) == 18
    for obj in objects:
        kubernetes_validate.validate(obj, version, strict=True)


def test_the_schema_check_can_fail() -> None:
    objects, _ = render()
    pod = copy.deepcopy(next(iter(pods(objects).values())))
    pod["spec"]["containers"][0]["readinessProbe"]["grpc"]["prot"] = 1
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(pod, k8s.KUBERNETES_VERSION, strict=True)


def test_anti_affinity_set_equals_neighbour_set() -> None:
    objects, scot = render("paper-fig8", 5)
    by_id = pods(objects)
    assert set(by_id) == set(scot.by_id)
    for b in scot.brokers:
        (term,) = by_id[b.id]["spec"]["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert term["topologyKey"] == "kubernetes.io/hostname"
        exprs = {e["key"]: e for e in term["labelSelector"]["matchExpressions"]}
        assert exprs[k8s.LABEL_RUN]["values"] == [RUN_ID]
        assert exprs[k8s.LABEL_BROKER]["operator"] == "In"
        assert set(exprs[k8s.LABEL_BROKER]["values"]) == {n.id for n in scot.neighbours(b.id)}
        assert by_id[b.id]["metadata"]["labels"][k8s.LABEL_BROKER] == b.id


def test_preferred_anti_affinity() -> None:
    objects, scot = render(preferred_anti_affinity=True)
    for b in scot.brokers:
        anti = pods(objects)[b.id]["spec"]["affinity"]["podAntiAffinity"]
        assert "requiredDuringSchedulingIgnoredDuringExecution" not in anti
        (weighted,) = anti["preferredDuringSchedulingIgnoredDuringExecution"]
        values = weighted["podAffinityTerm"]["labelSelector"]["matchExpressions"][1]["values"]
        assert set(values) == {n.id for n in scot.neighbours(b.id)}


def test_anti_affinity_warning() -> None:
    _, scot = render("paper-fig8", 5)
    assert k8s.anti_affinity_warning(scot.chromatic_need(), 5) is None
    warning = k8s.anti_affinity_warning(scot.chromatic_need(), 4)
    assert warning is not None and "4 node(s) < 5" in warning and "--preferred-anti-affinity" in warning
    soft = k8s.anti_affinity_warning(scot.chromatic_need(), 2, preferred=True)
    assert soft is not None and "co-locate" in soft


def test_pods_labels_dns_and_security() -> None:
    objects, scot = render()
    ns = objects[0]["metadata"]["name"]
    assert DNS_LABEL.match(ns)
    svc = of_kind(objects, "Service")
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
    for b in scot.brokers:
        pod = pods(objects)[b.id]
        meta, spec = pod["metadata"], pod["spec"]
        assert meta["namespace"] == ns
        assert meta["labels"][k8s.LABEL_RUN] == RUN_ID
        assert meta["labels"][k8s.LABEL_CLUSTER] == str(b.cluster)
        assert meta["labels"][k8s.LABEL_REGION] == b.region
        assert all(meta["labels"][k] == v for k, v in svc["spec"]["selector"].items())
        assert spec["hostname"] == b.id and spec["subdomain"] == svc["metadata"]["name"]
        (c,) = spec["containers"]
        assert c["command"] == [
            "python",
            "-m",
            "scotbed.broker",
            "--config",
            "/etc/scotbed/brokers.json",
            "--id",
            b.id,
            "--ready-file",
            contract.BROKER_READY_FILE,
        ]
        assert c["image"] == BROKER_IMAGE
        sc = c["securityContext"]
        assert sc["runAsNonRoot"] and sc["readOnlyRootFilesystem"]
        assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}
        assert set(c["resources"]) == {"requests", "limits"}
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert (
            "emptyDir" in volumes[mounts["events"]["name"]]
            and mounts["events"]["mountPath"] == k8s.EVENTS_DIR
        )
        assert mounts["config"]["readOnly"] is True


@pytest.mark.parametrize("version", sorted({k8s.KUBERNETES_VERSION, kubernetes_validate.latest_version()}))
def test_metrics_on_pods_are_annotated_for_scraping(version: str) -> None:
    objects, scot = render(metrics=True, port=6000)
    for obj in objects:
        kubernetes_validate.validate(obj, version, strict=True)
    for b in scot.brokers:
        pod = pods(objects)[b.id]
        assert pod["metadata"]["annotations"] == {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": "9464",
            "prometheus.io/path": "/metrics",
        }
        (c,) = pod["spec"]["containers"]
        assert c["ports"] == [
            {"name": "grpc", "containerPort": 6000, "protocol": "TCP"},
            {"name": "metrics", "containerPort": 9464, "protocol": "TCP"},
        ]
    doc = json.loads(of_kind(objects, "ConfigMap")["data"]["brokers.json"])
    assert {d["prometheus_port"] for d in doc["brokers"]} == {9464}
    same_run, scrapers = of_kind(objects, "NetworkPolicy")["spec"]["ingress"]
    assert same_run["ports"] == [{"protocol": "TCP", "port": 6000}]
    assert scrapers == {"ports": [{"protocol": "TCP", "port": 9464}]}  # from anywhere, that port only


def test_probes_are_grpc_on_the_broker_port() -> None:
    objects, _ = render(port=6000)
    for pod in pods(objects).values():
        (c,) = pod["spec"]["containers"]
        assert c["ports"] == [{"name": "grpc", "containerPort": 6000, "protocol": "TCP"}]
        assert c["readinessProbe"]["grpc"] == {"port": 6000}
        assert c["livenessProbe"]["grpc"] == {"port": 6000}


def test_network_policy_admits_only_the_same_run() -> None:
    objects, _ = render(port=6000)
    pol = of_kind(objects, "NetworkPolicy")["spec"]
    assert pol["policyTypes"] == ["Ingress"]
    assert pol["podSelector"]["matchLabels"][k8s.LABEL_RUN] == RUN_ID
    (rule,) = pol["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": {k8s.LABEL_RUN: RUN_ID}}}]
    assert rule["ports"] == [{"protocol": "TCP", "port": 6000}]
    assert k8s.run_labels(RUN_ID)[k8s.LABEL_RUN] == RUN_ID  # what a Locust Job must carry to get in


def test_configmap_holds_every_broker_config_with_dns_addresses() -> None:
    objects, scot = render()
    ns = objects[0]["metadata"]["name"]
    doc = json.loads(of_kind(objects, "ConfigMap")["data"]["brokers.json"])
    configs = [BrokerConfig.from_json(d) for d in doc["brokers"]]
    assert [c.id for c in configs] == [b.id for b in scot.brokers]
    for c in configs:
        assert c.listen == f"0.0.0.0:{k8s.DEFAULT_PORT}" and c.run_id == RUN_ID
        assert c.log.path == f"{k8s.EVENTS_DIR}/{c.id}.jsonl"
        for n in c.neighbours:
            assert n.address == f"{n.id}.brokers.{ns}.svc:{k8s.DEFAULT_PORT}"


def test_extra_objects_hook() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "locust-master"}, "spec": {}}
    objects, _ = render(extra_objects=[job])
    assert (
        objects[-1]["kind"] == "Job"
        and objects[-1]["metadata"]["namespace"] == objects[0]["metadata"]["name"]
    )
    assert "namespace" not in job["metadata"]  # the caller's object is not modified


def test_namespace_for_long_run_ids() -> None:
    rid = "x" * 38 + "-20250102T030405-0a1b2c3d"
    ns = k8s.namespace_for(rid)
    assert DNS_LABEL.match(ns) and ns.endswith("0a1b2c3d") and len(ns) <= 63
