"""Manifests follow the server's version: exec probes (the broker's ready file) before 1.24, gRPC
probes from 1.24 on."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from scotbed.experiment.spec import build_scot, parse_spec
from scotbed.orchestrator.backends.k8s import render as k8s
from scotbed.orchestrator.backends.k8s.versions import GRPC_PROBE_SINCE, parse_server_version
from scotbed.orchestrator.plan import deployed_configs

RUN_ID = "quickstart-20250102T030405-0a1b2c3d"


def broker_pods(server: tuple[int, int] | None) -> list[dict[str, Any]]:
    spec = parse_spec({"name": "quickstart", "topology": {"acyclic": "paper-fig2", "connectivity": 3}})
    configs = deployed_configs(spec, build_scot(spec), k8s.addressing(k8s.namespace_for(RUN_ID)), RUN_ID)
    objects = k8s.render_k8s(configs, RUN_ID, server_version=server)
    return [o for o in objects if o["kind"] == "Pod"]


@pytest.mark.parametrize("server", [(1, 20), (1, 23)])
def test_servers_before_grpc_probes_read_the_brokers_ready_file(server: tuple[int, int]) -> None:
    pods = broker_pods(server)
    assert len(pods) == 18
    for pod in pods:
        (c,) = pod["spec"]["containers"]
        ready, live = c["readinessProbe"], c["livenessProbe"]
        assert "grpc" not in ready and "grpc" not in live
        # no Python start per probe: the probe reads the file the broker itself keeps while SERVING
        (program, path) = ready["exec"]["command"]
        assert program == "cat"
        assert c["command"][c["command"].index("--ready-file") + 1] == path
        # ... on a volume the broker can write (the root file system is read-only)
        assert c["securityContext"]["readOnlyRootFilesystem"]
        writable = [m["mountPath"] for m in c["volumeMounts"] if not m.get("readOnly")]
        assert any(path.startswith(d.rstrip("/") + "/") for d in writable), (path, writable)
        assert ready["periodSeconds"] >= 10
        assert live["tcpSocket"] == {"port": k8s.DEFAULT_PORT}
        # liveness waits for the startup probe: a slow start on a busy node is no death
        assert c["startupProbe"]["tcpSocket"] == {"port": k8s.DEFAULT_PORT}


@pytest.mark.parametrize("server", [None, GRPC_PROBE_SINCE, (1, 31), (2, 0)])
def test_current_servers_get_grpc_probes(server: tuple[int, int] | None) -> None:
    for pod in broker_pods(server):
        (c,) = pod["spec"]["containers"]
        assert c["readinessProbe"]["grpc"] == {"port": k8s.DEFAULT_PORT}
        assert c["livenessProbe"]["grpc"] == {"port": k8s.DEFAULT_PORT}
        assert "exec" not in c["readinessProbe"]


@pytest.mark.parametrize("version", sorted({k8s.KUBERNETES_VERSION, kubernetes_validate.latest_version()}))
def test_old_server_manifests_pass_the_current_official_schemas(version: str) -> None:
    for pod in broker_pods((1, 20)):
        kubernetes_validate.validate(pod, version, strict=True)


def test_server_version_parsing() -> None:
    assert parse_server_version("1", "20") == (1, 20)
    assert parse_server_version("1", "27+") == (1, 27)  # vendor builds (GKE, EKS) add a suffix
    with pytest.raises(ValueError, match="unparsable server version"):
        parse_server_version("", "x")
