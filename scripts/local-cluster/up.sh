#!/usr/bin/env bash
# `make local-cluster`: a real Kubernetes (v1.20.2, built from Debian's source package) on this
# machine: etcd, API server (token auth + RBAC), controller manager and scheduler on loopback; one
# real kubelet running pods in the Docker engine on its docker0 bridge; a cluster DNS; N fake nodes
# tainted so only tolerating pods land there. Installs the Debian packages it needs (packages.sh),
# builds the broker and workload images into the node's Docker engine (images.sh). Leaves context
# `scotbed-local` as the current context.
#
# Idempotent: a healthy cluster is left alone (its images are rebuilt from the checkout); a broken or
# partial one is torn down (down.sh) and started afresh. Every process is recorded in
# $CLUSTER_DIR/pids and stopped by that pid.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/local-cluster/env.sh
. "$here/env.sh"
SECONDS=0

say() { printf 'local-cluster [%4ss] %s\n' "$SECONDS" "$*"; }
die() { echo "local-cluster: $*" >&2; exit 1; }

admin_token() { cut -d, -f1 "$CLUSTER_DIR/tokens.csv" | head -1; }
api_get() { curl -fsS --max-time 5 --cacert "$CLUSTER_DIR/pki/ca.crt" -H "Authorization: Bearer $(admin_token)" "$APISERVER_URL$1"; }

# ready_count PATH: how many Ready=True conditions the API's answer at PATH holds
ready_count() {
    api_get "$1" 2>/dev/null | tr -d ' \n' | grep -o '"type":"Ready","status":"True"' | wc -l
}
node_ready() { (($(ready_count "/api/v1/nodes/$1") == 1)); }
fake_nodes_ready() { (($(ready_count '/api/v1/nodes?labelSelector=scotbed.io%2Fnode-pool%3Dfake') == FAKE_NODES)); }

healthy() {
    local f
    [[ -f "$CLUSTER_DIR/tokens.csv" ]] || return 1
    for name in "${PROCESSES[@]}"; do
        [[ -f "$PID_DIR/$name.pid" ]] && kill -0 "$(pid_of "$name")" 2>/dev/null || return 1
    done
    api_get /readyz >/dev/null 2>&1 && node_ready "$NODE_NAME"
}

# start NAME CMD...: a background process in its own session, logged, its pid recorded
start() {
    local name=$1
    shift
    local what
    what=$(basename "$1")
    [[ "$what" == python* ]] && what=$(basename "$2")
    setsid "$@" >"$LOG_DIR/$name.log" 2>&1 </dev/null &
    # the pid, and what its command line holds: down.sh stops only a process that still matches
    printf '%s %s\n' "$!" "$what" >"$PID_DIR/$name.pid"
}
pid_of() { cut -d' ' -f1 "$PID_DIR/$1.pid"; }

# wait_for WHAT SECONDS CMD...: poll CMD until it succeeds, failing with the named process's log
wait_for() {
    local what=$1 limit=$2 deadline=$((SECONDS + $2))
    shift 2
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            tail -n 20 "$LOG_DIR/$what.log" >&2 2>/dev/null || true
            die "$what not ready after ${limit}s (log: $LOG_DIR/$what.log)"
        fi
        if [[ -f "$PID_DIR/$what.pid" ]] && ! kill -0 "$(pid_of "$what")" 2>/dev/null; then
            tail -n 20 "$LOG_DIR/$what.log" >&2 || true
            die "$what exited (log: $LOG_DIR/$what.log)"
        fi
        sleep 0.5
    done
    say "$what ready"
}

port_free() {
    ! ss -Hltn "sport = :$1" | grep -q .
}

[[ "$(id -u)" -eq 0 ]] || die "needs root (the kubelet manages containers, mounts and cgroups)"
"$here/packages.sh" install || die "the Debian packages it needs are missing (scripts/local-cluster/packages.sh)"
[[ -x "$CLUSTER_PYTHON" ]] || die "no Python environment at $CLUSTER_PYTHON: run make setup first"
for tool in etcd socat nsenter curl openssl ip ss; do
    command -v "$tool" >/dev/null || die "$tool is missing although its package is installed (packages.sh)"
done

if healthy; then
    "$here/images.sh" || die "building the broker and workload images failed (see above)"
    say "already up (context $CONTEXT)"
    exit 0
fi

"$here/build.sh"
"$here/down.sh" --quiet
mkdir -p "$PID_DIR" "$LOG_DIR" "$CLUSTER_DIR/pki"
chmod 700 "$CLUSTER_DIR"

# -- Docker engine: running, with the runc wrapper, the pause image ----------------------------------
"$REPO_DIR/scripts/start-dockerd.sh" >/dev/null || die "no Docker engine (scripts/start-dockerd.sh)"
"$here/docker-runtime.sh"
if ! docker image inspect "$PAUSE_IMAGE" >/dev/null 2>&1; then
    tar -C "$K8S_BIN" -c pause | docker import -c 'ENTRYPOINT ["/pause"]' - "$PAUSE_IMAGE" >/dev/null
fi
bridge=$(bridge_ip)
[[ -n "$bridge" ]] || die "the Docker engine has no docker0 bridge"
say "docker engine ready (bridge $bridge, pause image $PAUSE_IMAGE)"
"$here/images.sh" || die "building the broker and workload images failed (see above)"
say "broker and workload images built"

for p in $ETCD_CLIENT_PORT $ETCD_PEER_PORT $APISERVER_PORT 10250; do
    port_free "$p" || die "port $p is in use: another cluster? (make local-cluster-down, or stop its owner)"
done

# -- certificates, tokens, kubeconfigs ----------------------------------------------------------------
"$here/pki.sh" "$CLUSTER_DIR" "$bridge"
say "certificates and tokens made"

# -- kernel tunables the kubelet sets: save the current values for down.sh -----------------------------
for k in "${KERNEL_TUNABLES[@]}"; do echo "$k=$(sysctl -n "$k")"; done >"$CLUSTER_DIR/sysctl.saved"

# -- control plane ----------------------------------------------------------------------------------
start etcd etcd --name scotbed --data-dir "$CLUSTER_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "scotbed=http://127.0.0.1:$ETCD_PEER_PORT" --log-level warn
wait_for etcd 30 curl -fsS "http://127.0.0.1:$ETCD_CLIENT_PORT/health"

pki="$CLUSTER_DIR/pki"
start kube-apiserver "$K8S_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --bind-address 127.0.0.1 --secure-port "$APISERVER_PORT" --advertise-address "$bridge" \
    --endpoint-reconciler-type none --insecure-port 0 \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" --token-auth-file "$CLUSTER_DIR/tokens.csv" \
    --authorization-mode Node,RBAC --allow-privileged=false \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --service-account-issuer "https://kubernetes.default.svc.$CLUSTER_DOMAIN" \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$pki/ca.crt" \
    --kubelet-preferred-address-types InternalIP,Hostname \
    --profiling=false --v 1
wait_for kube-apiserver 180 api_get /readyz

start kube-controller-manager "$K8S_BIN/kube-controller-manager" \
    --kubeconfig "$CLUSTER_DIR/controller-manager.kubeconfig" --leader-elect=false \
    --bind-address 127.0.0.1 --port 0 \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --use-service-account-credentials=true --profiling=false --v 1
start kube-scheduler "$K8S_BIN/kube-scheduler" \
    --kubeconfig "$CLUSTER_DIR/scheduler.kubeconfig" --leader-elect=false \
    --bind-address 127.0.0.1 --port 0 --profiling=false --v 1
wait_for kube-controller-manager 180 api_get /api/v1/namespaces/default/serviceaccounts/default

# -- cluster DNS: answers from the API, listens on the bridge -------------------------------------------
start cluster-dns "$CLUSTER_PYTHON" "$here/cluster_dns.py" --kubeconfig "$CLUSTER_DIR/admin.kubeconfig" \
    --listen "$bridge:53" --domain "$CLUSTER_DOMAIN"
wait_for cluster-dns 30 "$CLUSTER_PYTHON" "$here/cluster_dns.py" --probe "$bridge:53"

# -- the real node ----------------------------------------------------------------------------------
mkdir -p "$CLUSTER_DIR/kubelet"
start kubelet "$K8S_BIN/kubelet" \
    --kubeconfig "$CLUSTER_DIR/kubelet.kubeconfig" --hostname-override "$NODE_NAME" \
    --node-ip "$bridge" --address "$bridge" --port 10250 --read-only-port 0 \
    --healthz-bind-address 127.0.0.1 \
    --anonymous-auth=false --authorization-mode Webhook --client-ca-file "$pki/ca.crt" \
    --tls-cert-file "$pki/kubelet.crt" --tls-private-key-file "$pki/kubelet.key" \
    --container-runtime docker --pod-infra-container-image "$PAUSE_IMAGE" \
    --root-dir "$CLUSTER_DIR/kubelet" --cert-dir "$CLUSTER_DIR/kubelet/pki" \
    --experimental-dockershim-root-directory "$CLUSTER_DIR/dockershim" \
    --cgroups-per-qos=false --enforce-node-allocatable= --fail-swap-on=false --cgroup-driver cgroupfs \
    --eviction-hard 'memory.available<100Mi,nodefs.available<1%,imagefs.available<1%' \
    --image-gc-high-threshold 100 --image-gc-low-threshold 99 \
    --make-iptables-util-chains=false --hairpin-mode none \
    --cluster-dns "$bridge" --cluster-domain "$CLUSTER_DOMAIN" \
    --node-labels "scotbed.io/node-pool=real" --v 1
wait_for kubelet 300 node_ready "$NODE_NAME"

# -- fake nodes -------------------------------------------------------------------------------------
start fake-nodes "$CLUSTER_PYTHON" "$here/fake_nodes.py" --kubeconfig "$CLUSTER_DIR/admin.kubeconfig" \
    --count "$FAKE_NODES" --taint "$FAKE_TAINT_KEY"
wait_for fake-nodes 180 fake_nodes_ready

# -- the user's kubeconfig --------------------------------------------------------------------------
"$CLUSTER_PYTHON" "$here/kubeconfig.py" merge "$KUBECONFIG_FILE" "$CLUSTER_DIR/admin.kubeconfig" "$CONTEXT"
say "up: context $CONTEXT in $KUBECONFIG_FILE (1 kubelet node $NODE_NAME, $FAKE_NODES fake nodes); \
took $SECONDS s"
