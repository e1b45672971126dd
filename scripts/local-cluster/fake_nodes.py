"""Fake nodes in the spirit of KWOK: Node objects kept alive by this loop, pods on them marked Running.

The real scheduler places pods over them (anti-affinity, taints, resources are enforced for real);
nothing runs: a pod bound to a fake node gets phase Running, Ready conditions and an address from
198.18.0.0/15 (the benchmarking range, never routed), and a deleted one is confirmed at once (what a
kubelet does), so namespaces on fake nodes terminate. The nodes carry the taint ``TAINT=true:NoSchedule``
and the label ``scotbed.io/node-pool=fake``: only pods that tolerate the taint land there.

``fake_nodes.py --kubeconfig FILE --count N --taint KEY``
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import signal
import sys
import time
from datetime import UTC, datetime
from typing import Any

PREFIX = "scotbed-fake-"
POOL_LABEL = "scotbed.io/node-pool"
PAIR_LABEL = "scotbed.io/fake-pair"
LEASE_NS = "kube-node-lease"
LEASE_S = 40
HEARTBEAT_S = 10.0
POLL_S = 1.0
NODE_NET = ipaddress.ip_network("192.0.2.0/24")  # TEST-NET-1: the fake nodes' own addresses
POD_NET = ipaddress.ip_network("198.18.0.0/15")
#: a dict body is a strategic merge patch (the client would send JSON Patch by default)
MERGE = "application/strategic-merge-patch+json"
CAPACITY = {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "100Gi"}

log = logging.getLogger("fake-nodes")


def now() -> datetime:
    return datetime.now(UTC)


def node_body(name: str, index: int, taint: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                POOL_LABEL: "fake",
                PAIR_LABEL: f"p{index // 2}",  # two nodes per value: a pool too small on purpose
            },
        },
        "spec": {"taints": [{"key": taint, "value": "true", "effect": "NoSchedule"}]},
    }


def node_status(index: int) -> dict[str, Any]:
    t = now().isoformat()
    conds = [("Ready", "True", "KubeletReady")] + [
        (c, "False", "KubeletHasNo" + c) for c in ("MemoryPressure", "DiskPressure", "PIDPressure")
    ]
    return {
        "status": {
            "capacity": CAPACITY,
            "allocatable": CAPACITY,
            "addresses": [{"type": "InternalIP", "address": str(NODE_NET[index + 1])}],
            "conditions": [
                {"type": c, "status": s, "reason": r, "lastHeartbeatTime": t, "lastTransitionTime": t}
                for c, s, r in conds
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.20.2-fake",
                "kubeProxyVersion": "v1.20.2-fake",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "containerRuntimeVersion": "fake://0",
                "kernelVersion": "",
                "osImage": "fake",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        }
    }


def pod_running_status(pod: Any, host_ip: str, pod_ip: str) -> dict[str, Any]:
    t = now().isoformat()
    return {
        "status": {
            "phase": "Running",
            "hostIP": host_ip,
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": t,
            "conditions": [
                {"type": c, "status": "True", "lastTransitionTime": t}
                for c in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": c.name,
                    "image": c.image,
                    "imageID": "",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": t}},
                }
                for c in pod.spec.containers
            ],
        }
    }


class FakeNodes:
    def __init__(self, core: Any, coordination: Any, count: int, taint: str) -> None:
        self.core = core
        self.coordination = coordination
        self.names = [f"{PREFIX}{i}" for i in range(count)]
        self.taint = taint
        self.next_ip = 1
        self.last_heartbeat = 0.0

    def register(self) -> None:
        for i, name in enumerate(self.names):
            try:
                self.core.create_node(node_body(name, i, self.taint))
            except Exception as e:
                if getattr(e, "status", None) != 409:
                    raise
        self.heartbeat()

    def heartbeat(self) -> None:
        for i, name in enumerate(self.names):
            self.core.patch_node_status(name, node_status(i), _content_type=MERGE)
        self.last_heartbeat = time.monotonic()

    def renew_leases(self) -> None:
        from kubernetes import client

        for name in self.names:
            spec = client.V1LeaseSpec(holder_identity=name, lease_duration_seconds=LEASE_S, renew_time=now())
            try:
                self.coordination.patch_namespaced_lease(name, LEASE_NS, {"spec": spec}, _content_type=MERGE)
            except Exception as e:
                if getattr(e, "status", None) != 404:
                    raise
                body = client.V1Lease(metadata=client.V1ObjectMeta(name=name), spec=spec)
                self.coordination.create_namespaced_lease(LEASE_NS, body)

    def tend_pods(self) -> None:
        hosts = {name: str(NODE_NET[i + 1]) for i, name in enumerate(self.names)}
        for pod in self.core.list_pod_for_all_namespaces().items:
            node = pod.spec.node_name
            if node not in hosts:
                continue
            ns, name = pod.metadata.namespace, pod.metadata.name
            try:
                if pod.metadata.deletion_timestamp is not None:
                    self.core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
                elif pod.status.phase != "Running":
                    pod_ip = str(POD_NET[self.next_ip])
                    self.next_ip += 1
                    status = pod_running_status(pod, hosts[node], pod_ip)
                    self.core.patch_namespaced_pod_status(name, ns, status, _content_type=MERGE)
            except Exception as e:  # gone meanwhile, or a conflict: the next round sees it again
                log.info("pod %s/%s: %s", ns, name, getattr(e, "reason", e))

    def run(self) -> None:
        self.register()
        log.info("%d fake nodes up (taint %s)", len(self.names), self.taint)
        while True:
            try:
                self.renew_leases()
                if time.monotonic() - self.last_heartbeat >= HEARTBEAT_S:
                    self.heartbeat()
                self.tend_pods()
            except Exception as e:  # keep the nodes alive through API hiccups
                log.warning("%s", e)
            time.sleep(POLL_S)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--taint", required=True, help="taint key (value true, effect NoSchedule)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=args.kubeconfig)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    FakeNodes(client.CoreV1Api(api), client.CoordinationV1Api(api), args.count, args.taint).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
