# Shared facts of the local cluster, sourced by the scripts in this directory: one home for the
# version, the cache and state paths, the ports, the names and the kubeconfig context.
# shellcheck shell=bash
K8S_VERSION=v1.20.2
K8S_CACHE_DIR="${SCOTBED_K8S_CACHE:-/var/cache/scotbed}/kubernetes-$K8S_VERSION"
K8S_BIN="$K8S_CACHE_DIR/bin"
# what the cached binaries were built from: a change here rebuilds them
K8S_BUILD="$K8S_VERSION+reflect2-1.0.2"
# everything one cluster instance writes: certificates, tokens, etcd data, kubelet root, logs, pids
CLUSTER_DIR="${SCOTBED_CLUSTER_DIR:-/var/lib/scotbed/local-cluster}"
PID_DIR="$CLUSTER_DIR/pids"
# every process of a cluster, in start order (down.sh stops them in reverse)
PROCESSES=(etcd kube-apiserver kube-controller-manager kube-scheduler cluster-dns kubelet fake-nodes)
LOG_DIR="$CLUSTER_DIR/logs"
ETCD_CLIENT_PORT=2379
ETCD_PEER_PORT=2380
APISERVER_PORT=6443
APISERVER_URL="https://127.0.0.1:$APISERVER_PORT"
SERVICE_CIDR=10.96.0.0/16
CLUSTER_DOMAIN=cluster.local
CONTEXT="${SCOTBED_CLUSTER_CONTEXT:-scotbed-local}"
KUBECONFIG_FILE="${KUBECONFIG:-$HOME/.kube/config}"
# the Python the helpers (cluster DNS, fake nodes, kubeconfig) run with: the checkout's environment
REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CLUSTER_PYTHON="${SCOTBED_CLUSTER_PYTHON:-$REPO_DIR/.venv/bin/python}"
# the one real node (kubelet + Docker) and the fake ones (a status loop, no containers)
NODE_NAME=scotbed-node
FAKE_NODES="${SCOTBED_FAKE_NODES:-24}"
FAKE_TAINT_KEY=scotbed.io/fake-node
PAUSE_IMAGE="scotbed-pause:$K8S_VERSION"
# the runc wrapper the Docker engine runs every container with (runc-oom0)
RUNTIME_NAME=scotbed-runc
RUNTIME_PATH=/usr/local/libexec/scotbed/runc-oom0
DOCKER_DAEMON_JSON="${DOCKER_DAEMON_JSON:-/etc/docker/daemon.json}"
# the kubelet sets these kernel tunables; up.sh saves the old values, down.sh restores them
KERNEL_TUNABLES=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

# The address of the Docker engine's own bridge (docker0): the node's address, the kubelet's and
# the cluster DNS's listening address. Pods live on this bridge.
bridge_ip() {
    ip -4 -o addr show docker0 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1
}
