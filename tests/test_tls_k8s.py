"""TLS on k8s: the run's certificates as one Secret that every broker and workload pod mounts (manifests
checked against the official schemas). The whole `scotbed run --backend k8s` over TLS is
``test_k8s_e2e``'s end-to-end run."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
from test_render_k8s import RUN_ID, pods

from scotbed.broker import tls
from scotbed.experiment.spec import build_scot, parse_spec
from scotbed.orchestrator import pki, security
from scotbed.orchestrator.backends.k8s import render as k8s
from scotbed.orchestrator.backends.k8s import render_tls as k8s_tls
from scotbed.orchestrator.plan import deployed_configs


def _configs() -> list[Any]:
    spec = parse_spec({"name": "quickstart", "topology": {"acyclic": "paper-fig2", "connectivity": 3}})
    return deployed_configs(spec, build_scot(spec), k8s.addressing(k8s.namespace_for(RUN_ID)), RUN_ID)


def _rendered(certs: Path) -> list[dict[str, Any]]:
    configs = _configs()
    pki.issue(certs, security.hosts(configs), RUN_ID)
    return k8s.render_k8s(configs, RUN_ID, tls_dir=certs)


def _mounts_the_certificates(pod_spec: dict[str, Any]) -> bool:
    volume = {"name": k8s_tls.VOLUME, "secret": {"secretName": k8s_tls.SECRET, "defaultMode": 0o444}}
    mount = {"name": k8s_tls.VOLUME, "mountPath": tls.CONTAINER_DIR, "readOnly": True}
    env = {"name": tls.ENV_DIR, "value": tls.CONTAINER_DIR}
    return volume in pod_spec["volumes"] and all(
        mount in c["volumeMounts"] and env in c["env"] for c in pod_spec["containers"]
    )


def test_the_secret_holds_every_certificate_and_every_broker_pod_mounts_it(tmp_path: Path) -> None:
    objects = _rendered(tmp_path / "tls")
    assert [o["kind"] for o in objects[:3]] == ["Namespace", "ConfigMap", "Secret"]
    secret = objects[2]
    files = sorted(p.name for p in (tmp_path / "tls").iterdir())
    assert sorted(secret["data"]) == files and "ca.pem" in files and "client.key" in files
    for name, value in secret["data"].items():
        assert base64.b64decode(value) == (tmp_path / "tls" / name).read_bytes()
    brokers = pods(objects)
    assert len(brokers) == 18
    for pod in brokers.values():
        assert _mounts_the_certificates(pod["spec"])
        container = pod["spec"]["containers"][0]
        assert "grpc" not in json.dumps(
            {k: container[k] for k in ("readinessProbe", "livenessProbe")}
        )  # the kubelet's gRPC probe speaks plaintext only: the ready file and a TCP connect instead
        assert container["readinessProbe"]["exec"]["command"][0] == "cat"
    for obj in objects:
        kubernetes_validate.validate(obj, k8s.KUBERNETES_VERSION, strict=True)
    plain = k8s.render_k8s(_configs(), RUN_ID)
    assert "Secret" not in [o["kind"] for o in plain]
    assert not any(k8s_tls.VOLUME in json.dumps(p) for p in pods(plain).values())


def test_a_workload_job_mounts_the_certificates_and_other_objects_stay_as_they_are() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "locust-master"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "locust", "image": "w"},
                        {"name": "side", "image": "w", "env": []},
                    ],
                }
            }
        },
    }
    mounted = k8s_tls.mount_in_job(job)
    assert _mounts_the_certificates(mounted["spec"]["template"]["spec"])
    assert "volumes" not in job["spec"]["template"]["spec"]  # the Job given is not changed
    kubernetes_validate.validate(mounted, k8s.KUBERNETES_VERSION, strict=True)
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    assert k8s_tls.mount_in_job(config_map) is config_map
