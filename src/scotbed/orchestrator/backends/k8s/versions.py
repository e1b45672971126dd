"""What differs between Kubernetes server versions, for the broker pods: one home for each feature gate.

The manifests are rendered for the server they go to (its version read from the API): a feature the
server does not have is replaced by an equivalent it has. gRPC probes came in 1.24; older servers
(the local cluster's 1.20, long-lived clusters) get an exec readiness probe that reads the file the
broker keeps while its gRPC health service says SERVING (:mod:`scotbed.broker.readyfile`), and a TCP
liveness probe. ``None`` (version unknown, e.g. ``scotbed render``) means a
current server.
"""

from __future__ import annotations

import re
from typing import Any

from scotbed.contract import BROKER_READY_FILE

#: (major, minor) of a Kubernetes server
ServerVersion = tuple[int, int]

#: the first server version with ``grpc`` probes
GRPC_PROBE_SINCE: ServerVersion = (1, 24)
#: the oldest server the k8s backend supports
OLDEST_SUPPORTED: ServerVersion = (1, 20)


def parse_server_version(major: str, minor: str) -> ServerVersion:
    """The API's ``/version`` fields (``minor`` may carry a vendor suffix, e.g. ``"27+"``)."""
    numbers = [re.match(r"\d+", part) for part in (major, minor)]
    if not all(numbers):
        raise ValueError(f"unparsable server version major={major!r} minor={minor!r}")
    return int(numbers[0].group()), int(numbers[1].group())  # type: ignore[union-attr]


def broker_probes(port: int, server: ServerVersion | None, tls: bool = False) -> dict[str, dict[str, Any]]:
    """The startup, readiness and liveness probes of a broker container on ``server``.

    The startup probe (a TCP connect, cheap) holds the other two back until the broker listens, so a
    broker that starts slowly on a busy node is not killed by its liveness probe. Before gRPC probes,
    readiness is ``cat`` of the broker's ready file (a Python health check per probe kept a 2-core
    node's CPUs busy: 18 pods, one Python start each every 5 s); liveness, which only has to notice a
    broker that stopped accepting, is a TCP connect there. With ``tls`` too: a kubelet's gRPC probe
    speaks plaintext only.
    """
    tcp = {"tcpSocket": {"port": port}}
    startup = {**tcp, "periodSeconds": 2, "timeoutSeconds": 5, "failureThreshold": 150}
    liveness = {"periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 6}
    if not tls and (server is None or server >= GRPC_PROBE_SINCE):
        grpc = {"grpc": {"port": port}}
        readiness = {**grpc, "periodSeconds": 2, "timeoutSeconds": 2, "failureThreshold": 3}
        return {"startupProbe": startup, "readinessProbe": readiness, "livenessProbe": {**grpc, **liveness}}
    check = ["cat", BROKER_READY_FILE]
    readiness = {"exec": {"command": check}, "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 3}
    return {"startupProbe": startup, "readinessProbe": readiness, "livenessProbe": {**tcp, **liveness}}
