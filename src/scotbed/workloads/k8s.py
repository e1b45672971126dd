"""Kubernetes objects that run a workload plan: Locust master and worker Jobs that exit when the run is over.

Pure: returns dicts; the orchestrator's renderer
(:func:`scotbed.orchestrator.backends.k8s.render.render_k8s`) takes them as
``extra_objects`` and gives them the run's namespace. Pass its
``run_labels(run_id)`` as ``labels`` so the brokers' NetworkPolicy admits the
Locust pods.

Objects: a ConfigMap with the locustfile and the plan (gzipped into
``binaryData`` when the JSON would not fit a ConfigMap), the master Service
(Locust's port 5557), the master Job (one pod, ``--headless --master``) and the
worker Job (``parallelism = completions = workers``). Unlike the usual chart,
nothing here runs forever: the master quits when every publisher is done and
the drain has passed (or on failure, or at ``--run-time``), the workers quit
with it, and both Jobs complete (``backoffLimit: 0``: a retried workload would
issue its subscriptions twice). Results (``events/``, ``workload/``,
``locust/``) go to ``/results``: a PersistentVolumeClaim when
``results_claim`` is given (so the orchestrator can collect them after the
pods exit), else an emptyDir (the Locust summary stays in the pod logs).
"""

from __future__ import annotations

import base64
import gzip
import re
from collections.abc import Mapping
from typing import Any

from scotbed.workloads.entry import LOCUSTFILE, PLAN_ENV, RUN_DIR_ENV
from scotbed.workloads.plan import Plan

MASTER_PORT = 5557
CONFIG_DIR = "/etc/scotbed-workload"
RESULTS_DIR = "/results"
CONFIGMAP_LIMIT_BYTES = 900 * 1024  # below the 1 MiB object limit, with room for metadata
UID = 10001  # the image's unprivileged user (broker-image/Dockerfile)
LOCUST_CPU_REQUEST = "500m"  # a Locust pod's CPU request unless the run sets one (--pod-cpu)


def _dns_name(*parts: str) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")
    return name[:63].rstrip("-")


def _container(
    name: str, image: str, args: list[str], plan_file: str, cpu: str, memory: str
) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python", "-m", "locust", "-f", f"{CONFIG_DIR}/locustfile.py", *args],
        "env": [
            {"name": PLAN_ENV, "value": f"{CONFIG_DIR}/{plan_file}"},
            {"name": RUN_DIR_ENV, "value": RESULTS_DIR},
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        ],
        "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": UID,
            "runAsGroup": UID,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [
            {"name": "workload", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "results", "mountPath": RESULTS_DIR},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }


def _job(
    name: str, labels: dict[str, str], container: dict[str, Any], volumes: list[dict[str, Any]], pods: int,
    deadline_s: int,
) -> dict[str, Any]:  # fmt: skip
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "activeDeadlineSeconds": deadline_s,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "securityContext": {"runAsNonRoot": True, "fsGroup": UID},
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def render_locust(
    plan: Plan,
    run_id: str,
    image: str,
    workers: int = 2,
    labels: Mapping[str, str] | None = None,
    results_claim: str | None = None,
    cpu: str = LOCUST_CPU_REQUEST,
    memory: str = "512Mi",
) -> list[dict[str, Any]]:
    """ConfigMap, master Service, master Job and worker Job for ``plan``, in apply order."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    base = {**(labels or {}), "app.kubernetes.io/part-of": "scotbed", "app.kubernetes.io/name": "locust"}
    prefix = _dns_name("locust", run_id)[:40].rstrip("-")
    cm_name, svc_name = f"{prefix}-files", f"{prefix}-master"
    text = plan.dumps()
    cm: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": cm_name, "labels": base},
        "data": {"locustfile.py": LOCUSTFILE},
    }
    if len(text.encode()) + len(LOCUSTFILE) <= CONFIGMAP_LIMIT_BYTES:
        plan_file = "plan.json"
        cm["data"][plan_file] = text
    else:
        plan_file = "plan.json.gz"
        packed = gzip.compress(text.encode(), mtime=0)
        if len(packed) > CONFIGMAP_LIMIT_BYTES:
            raise ValueError(
                f"the plan is {len(packed)} bytes gzipped; a ConfigMap holds {CONFIGMAP_LIMIT_BYTES}"
            )
        cm["binaryData"] = {plan_file: base64.b64encode(packed).decode()}
    master_labels = {**base, "app.kubernetes.io/component": "locust-master", "scotbed.io/locust": prefix}
    worker_labels = {**base, "app.kubernetes.io/component": "locust-worker", "scotbed.io/locust": prefix}
    results: dict[str, Any] = (
        {"name": "results", "persistentVolumeClaim": {"claimName": results_claim}}
        if results_claim
        else {"name": "results", "emptyDir": {}}
    )
    volumes = [
        {"name": "workload", "configMap": {"name": cm_name}},
        results,
        {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
    ]
    users = len(plan.subscribers) + len(plan.publishers)
    run_time = int(plan.timeout_s)
    deadline = run_time + 600
    master_args = [
        "--headless", "--master", "--master-bind-port", str(MASTER_PORT), "--expect-workers", str(workers),
        "--expect-workers-max-wait", "300", "-u", str(users), "-r", str(max(users, 1)),
        "--run-time", f"{run_time}s", "--stop-timeout", "5", "--only-summary",
        "--csv", f"{RESULTS_DIR}/locust/locust", "--html", f"{RESULTS_DIR}/locust/report.html",
    ]  # fmt: skip
    worker_args = ["--worker", "--master-host", svc_name, "--master-port", str(MASTER_PORT)]
    master = _container("locust-master", image, master_args, plan_file, cpu, memory)
    master["ports"] = [{"name": "locust", "containerPort": MASTER_PORT, "protocol": "TCP"}]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": svc_name, "labels": base},
        "spec": {
            "selector": master_labels,
            "ports": [{"name": "locust", "port": MASTER_PORT, "targetPort": MASTER_PORT, "protocol": "TCP"}],
        },
    }
    return [
        cm,
        service,
        _job(f"{prefix}-master", master_labels, master, volumes, 1, deadline),
        _job(
            f"{prefix}-worker",
            worker_labels,
            _container("locust-worker", image, worker_args, plan_file, cpu, memory),
            volumes,
            workers,
            deadline,
        ),
    ]
