"""Kubernetes manifests of a peers run (Vinifera, docs/design.md §10), as plain dicts.

Objects, in apply order: Namespace, ConfigMap (the run file every peer reads), headless Service
``peers``, NetworkPolicy, one Pod per peer. Peer ``3`` is ``peer-3.peers.<namespace>.svc:<port>``
(Pod ``hostname`` + ``subdomain``; not-ready addresses are published so peers resolve each other
while starting). A peer's overlay links are drawn by gossip at run time, so unlike a broker it has no
fixed neighbours: required anti-affinity keeps it off the node of every other peer of the run
(``preferred`` on a cluster with fewer nodes than peers). Pods never restart: a peer that lost its
state would be a churn event nobody asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scotbed import contract
from scotbed.orchestrator.backends.k8s.placement import ANYWHERE, Placement
from scotbed.orchestrator.backends.k8s.render import (
    BROKER_UID,
    CONFIG_DIR,
    DEFAULT_PORT,
    EVENTS_DIR,
    LABEL_COMPONENT,
    LABEL_RUN,
    Resources,
    anti_affinity,
    namespace_object,
    process_container,
    run_labels,
)
from scotbed.vinifera.process.cluster import RUN_FILE
from scotbed.vinifera.process.launch import command

SERVICE = "peers"
COMPONENT = "peer"
LABEL_PEER = "scotbed.io/peer"
CONFIG_MAP = "scotbed-peers"
#: where every peer pod reads the run file (the ConfigMap's key, mounted in CONFIG_DIR)
RUN_FILE_PATH = f"{CONFIG_DIR}/{RUN_FILE}"


def peer_address(name: int, namespace: str, port: int = DEFAULT_PORT) -> str:
    """What the other peers (and an orchestrator inside the cluster) dial."""
    return f"{contract.peer_node(name)}.{SERVICE}.{namespace}.svc:{port}"


def peer_log(name: int) -> str:
    """A peer's event log inside its pod (the events emptyDir, copied out like a broker's)."""
    return f"{EVENTS_DIR}/{contract.peer_node(name)}.jsonl"


def selector(run_id: str) -> dict[str, str]:
    return {LABEL_RUN: run_id, LABEL_COMPONENT: COMPONENT}


def _pod(
    name: int,
    others: list[str],
    run_id: str,
    namespace: str,
    image: str,
    port: int,
    res: Resources,
    preferred: bool,
    placement: Placement,
) -> dict[str, Any]:
    node = contract.peer_node(name)
    container = {
        "name": COMPONENT,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python", *command(RUN_FILE_PATH, name)],
        "ports": [{"name": "grpc", "containerPort": port, "protocol": "TCP"}],
        "env": [
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        ],
        # a peer has no health service: listening is ready (the driver's Control call waits for it too)
        "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 2, "timeoutSeconds": 2},
        **process_container(res),
    }
    spec: dict[str, Any] = {
        "hostname": node,
        "subdomain": SERVICE,
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 5,
        "securityContext": {"runAsNonRoot": True, "fsGroup": BROKER_UID},
        "containers": [container],
        "volumes": [
            {"name": "config", "configMap": {"name": CONFIG_MAP}},
            {"name": "events", "emptyDir": {"sizeLimit": res.events_size_limit}},
            {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
        ],
        **placement.pod_spec(),
    }
    if others:
        spec["affinity"] = {"podAntiAffinity": anti_affinity(run_id, others, preferred, key=LABEL_PEER)}
    labels = {**run_labels(run_id), **selector(run_id), LABEL_PEER: node}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": node, "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def render_peers(
    names: Sequence[int],
    run_file: str,
    run_id: str,
    namespace: str,
    *,
    image: str,
    port: int = DEFAULT_PORT,
    preferred_anti_affinity: bool = False,
    resources: Resources | None = None,
    placement: Placement = ANYWHERE,
) -> list[dict[str, Any]]:
    """Every object of a peers run in apply order; ``run_file``: the run file's text (written by
    :class:`~scotbed.vinifera.process.cluster.PeerCluster` with :func:`peer_address` and :func:`peer_log`)."""
    base, res = run_labels(run_id), resources or Resources()
    nodes = [contract.peer_node(n) for n in names]
    objects: list[dict[str, Any]] = [
        namespace_object(namespace, base),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CONFIG_MAP, "namespace": namespace, "labels": base},
            "data": {RUN_FILE: run_file},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": SERVICE, "namespace": namespace, "labels": base},
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": True,
                "selector": selector(run_id),
                "ports": [{"name": "grpc", "port": port, "targetPort": port, "protocol": "TCP"}],
            },
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "peers-same-run-only", "namespace": namespace, "labels": base},
            "spec": {
                "podSelector": {"matchLabels": selector(run_id)},
                "policyTypes": ["Ingress"],
                "ingress": [
                    {
                        "from": [{"podSelector": {"matchLabels": selector(run_id)}}],
                        "ports": [{"protocol": "TCP", "port": port}],
                    }
                ],
            },
        },
    ]
    for n, node in zip(names, nodes, strict=True):
        others = [o for o in nodes if o != node]
        objects.append(
            _pod(n, others, run_id, namespace, image, port, res, preferred_anti_affinity, placement)
        )
    return objects
