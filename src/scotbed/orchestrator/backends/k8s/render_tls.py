"""TLS on Kubernetes: the run's certificates as one Secret, mounted read-only into every pod of the run.

The broker pods and the workload's Job pods see the files at
:data:`scotbed.broker.tls.CONTAINER_DIR` and are told so by
:data:`scotbed.broker.tls.ENV_DIR`, as compose containers are. The Secret
holds every broker's key (the run is one trust domain, as on compose, where
the whole directory is mounted); the CA key is never written, so nothing in
the cluster can issue a certificate the run trusts.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

from scotbed.broker import tls

SECRET = "scotbed-tls"
VOLUME = "scotbed-tls"
FILE_MODE = 0o444  # the Job pods run as other users than the brokers; the namespace is the run's own


def secret(directory: Path, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    """The Secret of every certificate and key file in ``directory``."""
    data = {
        p.name: base64.b64encode(p.read_bytes()).decode("ascii")
        for p in sorted(directory.iterdir())
        if p.is_file()
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": SECRET, "namespace": namespace, "labels": labels},
        "data": data,
    }


def mount(pod_spec: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``pod_spec`` whose containers read the certificates and know where they are."""
    spec = copy.deepcopy(pod_spec)
    spec.setdefault("volumes", []).append(
        {"name": VOLUME, "secret": {"secretName": SECRET, "defaultMode": FILE_MODE}}
    )
    for c in spec.get("containers", []):
        c.setdefault("volumeMounts", []).append(
            {"name": VOLUME, "mountPath": tls.CONTAINER_DIR, "readOnly": True}
        )
        c.setdefault("env", []).append({"name": tls.ENV_DIR, "value": tls.CONTAINER_DIR})
    return spec


def mount_in_job(job: dict[str, Any]) -> dict[str, Any]:
    """A workload Job whose pods read the certificates (its Locust users dial the brokers over TLS)."""
    if job.get("kind") != "Job":
        return job
    template = job["spec"]["template"]
    return {**job, "spec": {**job["spec"], "template": {**template, "spec": mount(template["spec"])}}}
