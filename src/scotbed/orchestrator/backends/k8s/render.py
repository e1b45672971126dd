"""Kubernetes manifests for one run, as plain dicts (writing them is :mod:`scotbed.orchestrator.render`).

Objects, in apply order: Namespace, ConfigMap (all broker configs in one
``brokers.json``), the TLS Secret (with ``security.tls``), headless Service,
NetworkPolicy, one Pod per broker, then ``extra_objects`` (the workload's
Locust master/worker Jobs: give their pods :func:`run_labels` so the
NetworkPolicy admits them).

Broker ``b-a-0`` is reachable at ``b-a-0.<service>.<namespace>.svc:<port>``
(Pod ``hostname`` + ``subdomain`` on the headless Service, which publishes
not-ready addresses so neighbours resolve each other while starting).
Pods never restart (``restartPolicy: Never``): a broker that lost its routing
state would silently corrupt the measurements, so a crash fails the run.
Required pod anti-affinity keeps each broker off the node of every aCOL and
iCOL neighbour, so no link is a loopback; that needs
``Scot.chromatic_need()`` nodes, see :func:`anti_affinity_warning`.
With the spec's ``metrics: {prometheus: true}`` every broker pod has a container
port named ``metrics`` and the ``prometheus.io/*`` scrape annotations, and the
NetworkPolicy admits any scraper to that port (:func:`scrape_annotations`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from scotbed import contract
from scotbed.broker import metrics
from scotbed.config import BrokerConfig, dump_all
from scotbed.orchestrator.backends.k8s import render_tls
from scotbed.orchestrator.backends.k8s.placement import ANYWHERE, Placement
from scotbed.orchestrator.backends.k8s.versions import ServerVersion, broker_probes
from scotbed.orchestrator.images import BROKER_IMAGE
from scotbed.orchestrator.plan import Addressing
from scotbed.workloads.k8s import render_locust
from scotbed.workloads.plan import Plan

LABEL_RUN = "scotbed.io/run-id"
LABEL_BROKER = "scotbed.io/broker"
LABEL_CLUSTER = "scotbed.io/cluster"
LABEL_REGION = "scotbed.io/region"
LABEL_COMPONENT = "app.kubernetes.io/component"
SERVICE = "brokers"
CONFIG_DIR = "/etc/scotbed"
CONFIG_FILE = f"{CONFIG_DIR}/brokers.json"
EVENTS_DIR = "/var/log/scotbed"
DEFAULT_PORT = 50051
#: the broker image's unprivileged user (broker-image/Dockerfile)
BROKER_UID = 10001
#: the newest schema version the tests validate against
KUBERNETES_VERSION = "1.31"
#: what a run's namespace starts with unless `--namespace-prefix` names another prefix
NAMESPACE_PREFIX = "scotbed-"
#: how the publishers start on Kubernetes: the Locust master in the cluster releases them itself once
#: every broker reports quiescent (the orchestrator outside cannot reach the Jobs' files)
WORKLOAD_RELEASE: Literal["auto"] = "auto"


@dataclass(frozen=True)
class Resources:
    """Per-broker container resources (Kubernetes quantities)."""

    cpu_request: str = "100m"
    cpu_limit: str = "1"
    memory_request: str = "128Mi"
    memory_limit: str = "512Mi"
    events_size_limit: str = "1Gi"  # emptyDir that holds the broker's event log


def namespace_object(name: str, labels: dict[str, str]) -> dict[str, Any]:
    """A run's Namespace: its labels, and the "restricted" pod security level every pod meets."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {**labels, "pod-security.kubernetes.io/enforce": "restricted"}},
    }


def process_container(res: Resources) -> dict[str, Any]:
    """What every scotbed process container has, broker or peer: its resources, the hardening and the
    run's mounts (config read-only, the events emptyDir, a writable /tmp)."""
    return {
        "resources": {
            "requests": {"cpu": res.cpu_request, "memory": res.memory_request},
            "limits": {"cpu": res.cpu_limit, "memory": res.memory_limit},
        },
        "securityContext": container_security(),
        "volumeMounts": [
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "events", "mountPath": EVENTS_DIR},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }


def container_security() -> dict[str, Any]:
    """The broker image's container hardening (the namespace enforces the "restricted" pod security
    level); a fresh dict per pod, so the YAML has no aliases."""
    return {
        "runAsNonRoot": True,
        "runAsUser": BROKER_UID,
        "runAsGroup": BROKER_UID,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def namespace_for(run_id: str, prefix: str | None = None) -> str:
    """The run's namespace: ``prefix`` (None: :data:`NAMESPACE_PREFIX`) + the run id as a DNS label
    (<= 63, lowercase), cut where too long so as to keep the run id's random suffix, which keeps it
    unique."""
    ns = ((NAMESPACE_PREFIX if prefix is None else prefix) + run_id).lower()
    if len(ns) > 63:
        ns = ns[:54].rstrip("-") + "-" + run_id.lower()[-8:]
    return ns


def run_labels(run_id: str) -> dict[str, str]:
    """Labels every pod of the run carries; the NetworkPolicy admits exactly these pods."""
    return {"app.kubernetes.io/name": "scotbed", LABEL_RUN: run_id}


def locust_jobs(
    plan: Plan, run_id: str, image: str, workers: int, cpu: str | None = None
) -> list[dict[str, Any]]:
    """The Locust ConfigMap, master Service and Jobs that play ``plan`` (released
    :data:`WORKLOAD_RELEASE`), labelled with :func:`run_labels` so the brokers' NetworkPolicy admits
    their pods; ``cpu``: each Locust pod's CPU request (None: the renderer's default)."""
    sized = {"cpu": cpu} if cpu else {}
    return render_locust(plan, run_id, image, workers, labels=run_labels(run_id), **sized)


def broker_address(broker: str, namespace: str, port: int = DEFAULT_PORT) -> str:
    return f"{broker}.{SERVICE}.{namespace}.svc:{port}"


def anti_affinity_warning(need: int, nodes: int, preferred: bool = False) -> str | None:
    """A warning when ``nodes`` cannot keep every broker apart from its neighbours (``need`` nodes,
    ``Scot.chromatic_need()``)."""
    if nodes >= need:
        return None
    if preferred:
        return (
            f"{nodes} node(s) < {need} needed to separate every broker from its neighbours; "
            "preferred anti-affinity will co-locate some neighbours (their links become node-local)"
        )
    return (
        f"{nodes} node(s) < {need} needed by the required anti-affinity: some broker pods will stay "
        "Pending; use --preferred-anti-affinity or add nodes"
    )


def anti_affinity(
    run_id: str, neighbours: list[str], preferred: bool, key: str = LABEL_BROKER
) -> dict[str, Any]:
    """Keep the pod off the nodes of the run's pods whose ``key`` label is one of ``neighbours``."""
    term = {
        "labelSelector": {
            "matchExpressions": [
                {"key": LABEL_RUN, "operator": "In", "values": [run_id]},
                {"key": key, "operator": "In", "values": neighbours},
            ]
        },
        "topologyKey": "kubernetes.io/hostname",
    }
    if preferred:
        return {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]}
    return {"requiredDuringSchedulingIgnoredDuringExecution": [term]}


def _pod(
    cfg: BrokerConfig,
    run_id: str,
    namespace: str,
    image: str,
    port: int,
    res: Resources,
    preferred: bool,
    server: ServerVersion | None,
    placement: Placement,
    tls: bool,
) -> dict[str, Any]:
    labels = {
        **run_labels(run_id),
        LABEL_COMPONENT: "broker",
        LABEL_BROKER: cfg.id,
        LABEL_CLUSTER: str(cfg.cluster),
        LABEL_REGION: cfg.region,
    }
    container = {
        "name": "broker",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": [
            "python",
            "-m",
            "scotbed.broker",
            "--config",
            f"{CONFIG_DIR}/brokers.json",
            "--id",
            cfg.id,
            "--ready-file",
            contract.BROKER_READY_FILE,
        ],
        "ports": [{"name": "grpc", "containerPort": port, "protocol": "TCP"}],
        "env": [
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        ],
        **broker_probes(port, server, tls),
        **process_container(res),
    }
    metadata: dict[str, Any] = {"name": cfg.id, "namespace": namespace, "labels": labels}
    if cfg.prometheus_port is not None:
        container["ports"].append(
            {"name": "metrics", "containerPort": cfg.prometheus_port, "protocol": "TCP"}
        )
        metadata["annotations"] = scrape_annotations(cfg.prometheus_port)
    neighbours = [n.id for n in cfg.neighbours]
    spec: dict[str, Any] = {
        "hostname": cfg.id,
        "subdomain": SERVICE,
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 15,
        "securityContext": {"runAsNonRoot": True, "fsGroup": BROKER_UID},
        "containers": [container],
        "volumes": [
            {"name": "config", "configMap": {"name": "scotbed-brokers"}},
            {"name": "events", "emptyDir": {"sizeLimit": res.events_size_limit}},
            {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
        ],
    }
    spec.update(placement.pod_spec())
    if neighbours:
        spec["affinity"] = {"podAntiAffinity": anti_affinity(run_id, neighbours, preferred)}
    if tls:
        spec = render_tls.mount(spec)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
    }


def addressing(namespace: str, port: int = DEFAULT_PORT) -> Addressing:
    """Brokers as the pods see them: DNS addresses, event logs in the events emptyDir."""
    return Addressing(
        dial=broker_address("{id}", namespace, port),
        listen=f"0.0.0.0:{port}",
        log_path=f"{EVENTS_DIR}/{{id}}.jsonl",
        metrics_port=metrics.PORT,
    )


def scrape_annotations(metrics_port: int) -> dict[str, str]:
    """The ``prometheus.io/*`` annotations a Prometheus' pod discovery reads to scrape a broker pod."""
    return {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(metrics_port),
        "prometheus.io/path": metrics.PATH,
    }


def metrics_ingress(configs: Sequence[BrokerConfig]) -> list[dict[str, Any]]:
    """NetworkPolicy ingress rules admitting a scraper from anywhere to the brokers' metrics ports."""
    ports = sorted({c.prometheus_port for c in configs if c.prometheus_port is not None})
    return [{"ports": [{"protocol": "TCP", "port": p}]} for p in ports]


def render_k8s(
    configs: list[BrokerConfig],
    run_id: str,
    *,
    image: str = BROKER_IMAGE,
    namespace: str | None = None,
    port: int = DEFAULT_PORT,
    preferred_anti_affinity: bool = False,
    resources: Resources = Resources(),
    extra_objects: Sequence[dict[str, Any]] = (),
    server_version: ServerVersion | None = None,
    placement: Placement = ANYWHERE,
    tls_dir: Path | None = None,
) -> list[dict[str, Any]]:
    """Every object of the run in apply order, for ``configs`` rendered with :func:`addressing` in
    the same namespace; ``extra_objects`` (e.g. Locust Jobs) come last and get the run's namespace
    when they have none. ``server_version``: the target server's, for the features that depend on it
    (:mod:`.versions`); None = a current server. ``placement``: the node pool the brokers go to
    (:mod:`.placement`). ``tls_dir``: the run's certificates (``security.tls``), shipped as a
    Secret every broker pod mounts (:mod:`.render_tls`)."""
    ns = namespace or namespace_for(run_id)
    base = run_labels(run_id)
    broker_selector = {LABEL_RUN: run_id, LABEL_COMPONENT: "broker"}
    objects: list[dict[str, Any]] = [
        namespace_object(ns, base),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "scotbed-brokers", "namespace": ns, "labels": base},
            "data": {"brokers.json": json.dumps(dump_all(configs), indent=1, sort_keys=True)},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": SERVICE, "namespace": ns, "labels": base},
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": True,
                "selector": broker_selector,
                "ports": [{"name": "grpc", "port": port, "targetPort": port, "protocol": "TCP"}],
            },
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "brokers-same-run-only", "namespace": ns, "labels": base},
            "spec": {
                "podSelector": {"matchLabels": broker_selector},
                "policyTypes": ["Ingress"],
                "ingress": [
                    {
                        "from": [{"podSelector": {"matchLabels": {LABEL_RUN: run_id}}}],
                        "ports": [{"protocol": "TCP", "port": port}],
                    },
                    *metrics_ingress(configs),
                ],
            },
        },
    ]
    if tls_dir is not None:
        objects.insert(2, render_tls.secret(tls_dir, ns, base))
    objects += [
        _pod(
            c,
            run_id,
            ns,
            image,
            port,
            resources,
            preferred_anti_affinity,
            server_version,
            placement,
            tls_dir is not None,
        )
        for c in configs
    ]
    objects += [{**obj, "metadata": {"namespace": ns, **obj.get("metadata", {})}} for obj in extra_objects]
    return objects
