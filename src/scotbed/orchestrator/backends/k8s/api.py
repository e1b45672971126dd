"""The Kubernetes API as the k8s backend uses it: the client bundle (:class:`Kube`), connecting to a
context, applying one object, counting schedulable nodes, and API errors in one line.

Behind :class:`Kube` and :class:`Streams`, so the backend's logic runs against an in-memory API in
tests.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any, Protocol

from scotbed.orchestrator.backends.base import BackendError
from scotbed.orchestrator.backends.k8s.placement import ANYWHERE, Placement
from scotbed.orchestrator.backends.k8s.versions import ServerVersion, parse_server_version

log = logging.getLogger(__name__)


class Streams(Protocol):
    """The two websocket calls, behind an interface so tests need no API server."""

    def exec_to(
        self, namespace: str, pod: str, container: str, command: list[str], out: IO[bytes], timeout_s: float
    ) -> tuple[int | None, str]:
        """Run ``command`` in the container, stdout into ``out``; returns (exit code, stderr)."""
        ...

    def connect(self, namespace: str, pod: str, port: int) -> Any:
        """A socket connected to the pod's port."""
        ...


@dataclass
class Kube:
    """The API objects one cluster is reached through (CoreV1Api, BatchV1Api, NetworkingV1Api)."""

    core: Any
    batch: Any
    networking: Any
    streams: Streams
    context: str | None  # the kubeconfig context name; None in-cluster
    in_cluster: bool = False
    server_version: ServerVersion | None = None  # None: unknown, rendered for a current server


class ClientStreams:
    """:class:`Streams` over ``kubernetes.stream`` (exec with a binary stdout, port-forward).

    ``kubernetes.stream.stream`` swaps the ``request`` method of the API client it is given while it
    runs, so every call gets an API client of its own: the port-forward threads open streams while
    the main thread creates objects, and a shared client sends those creates down the websocket path
    ("Missing required parameter `ports`", seen on a real API server)."""

    def __init__(self, core: Any) -> None:
        self.configuration = core.api_client.configuration

    @property
    def core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(client.ApiClient(self.configuration))

    def exec_to(
        self, namespace: str, pod: str, container: str, command: list[str], out: IO[bytes], timeout_s: float
    ) -> tuple[int | None, str]:
        from kubernetes.stream import stream

        resp = stream(
            self.core.connect_get_namespaced_pod_exec,
            pod,
            namespace,
            container=container,
            command=command,
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
            binary=True,
            _preload_content=False,
        )
        err = bytearray()
        deadline = time.monotonic() + timeout_s
        try:
            while resp.is_open():
                if time.monotonic() > deadline:
                    return None, f"timed out after {timeout_s:.0f} s"
                resp.update(timeout=1)
                out.write(resp.read_stdout(timeout=0))
                err += resp.read_stderr(timeout=0)
            out.write(resp.read_stdout(timeout=0))
            err += resp.read_stderr(timeout=0)
            return resp.returncode, err.decode("utf-8", "replace")
        finally:
            resp.close()

    def connect(self, namespace: str, pod: str, port: int) -> Any:
        from kubernetes.stream import portforward

        pf = portforward(self.core.connect_get_namespaced_pod_portforward, pod, namespace, ports=str(port))
        return pf.socket(port)


def connect(context: str | None = None) -> Kube:
    """Clients for ``context`` (default: the kubeconfig's current one, or the pod's service account)."""
    from kubernetes import client, config

    try:
        api_client = config.new_client_from_config(context=context)
        if context is None:
            _, active = config.list_kube_config_contexts()
            context = active["name"] if active else None
        in_cluster = False
    except (config.ConfigException, OSError) as e:
        if context is not None or not os.environ.get("KUBERNETES_SERVICE_HOST"):
            which = f"context {context!r}" if context else "the current context"
            raise BackendError(f"cannot load kubeconfig for {which}: {e}") from None
        cfg = client.Configuration()
        config.load_incluster_config(client_configuration=cfg)
        api_client, in_cluster = client.ApiClient(cfg), True
    core = client.CoreV1Api(api_client)
    server: ServerVersion | None = None
    try:  # unreachable now: the first real call says so with its own context
        code = client.VersionApi(api_client).get_code()
        server = parse_server_version(code.major, code.minor)
    except Exception as e:
        log.info("server version unknown (%s); rendering for a current server", api_message(e))
    return Kube(
        core=core,
        batch=client.BatchV1Api(api_client),
        networking=client.NetworkingV1Api(api_client),
        streams=ClientStreams(core),
        context=context,
        in_cluster=in_cluster,
        server_version=server,
    )


def api_message(e: Exception) -> str:
    """The API server's own message from an ApiException (its JSON body), else the exception text."""
    status = getattr(e, "status", None)
    body = getattr(e, "body", None)
    if body:
        with contextlib.suppress(ValueError, TypeError):
            msg = json.loads(body).get("message")
            if msg:
                return f"{status} {msg}"
    reason = getattr(e, "reason", None)
    return f"{status} {reason}" if status is not None else str(e) or type(e).__name__


def is_status(e: Exception, *codes: int) -> bool:
    return getattr(e, "status", None) in codes


#: kind -> (API attribute of Kube, create method, namespaced)
_CREATE = {
    "Namespace": ("core", "create_namespace", False),
    "ConfigMap": ("core", "create_namespaced_config_map", True),
    "Secret": ("core", "create_namespaced_secret", True),
    "Service": ("core", "create_namespaced_service", True),
    "ServiceAccount": ("core", "create_namespaced_service_account", True),
    "Pod": ("core", "create_namespaced_pod", True),
    "NetworkPolicy": ("networking", "create_namespaced_network_policy", True),
    "Job": ("batch", "create_namespaced_job", True),
}


def apply(kube: Kube, obj: dict[str, Any]) -> None:
    """Create one rendered object (a run's namespace is new, so create is apply)."""
    kind = obj.get("kind", "?")
    name = obj.get("metadata", {}).get("name", "?")
    if kind not in _CREATE:
        raise BackendError(f"{kind} {name}: kind not supported by the k8s backend ({', '.join(_CREATE)})")
    api_name, method, namespaced = _CREATE[kind]
    fn = getattr(getattr(kube, api_name), method)
    try:
        if namespaced:
            fn(obj["metadata"]["namespace"], obj)
        else:
            fn(obj)
    except Exception as e:
        if not hasattr(e, "status"):
            raise BackendError(f"creating {kind} {name}: cannot reach the API server: {e}") from None
        raise BackendError(f"creating {kind} {name}: {api_message(e)}") from None


def schedulable_nodes(nodes: Sequence[Any], placement: Placement = ANYWHERE) -> int:
    """Nodes a broker pod can land on: Ready, not cordoned, in the placement's pool (labels, and every
    NoSchedule/NoExecute taint tolerated)."""
    count = 0
    for n in nodes:
        if n.spec is not None and n.spec.unschedulable:
            continue
        taints = (n.spec.taints if n.spec else None) or []
        taint_docs = [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]
        if not placement.admits((n.metadata.labels if n.metadata else None) or {}, taint_docs):
            continue
        conds = (n.status.conditions if n.status else None) or []
        if not any(c.type == "Ready" and c.status == "True" for c in conds):
            continue
        count += 1
    return count
