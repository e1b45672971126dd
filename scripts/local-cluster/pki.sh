#!/usr/bin/env bash
# pki.sh DIR BRIDGE_IP: the local cluster's credentials, fresh for every cluster instance.
#   DIR/pki/ca.{crt,key}                     the cluster CA
#   DIR/pki/apiserver.{crt,key}              the API server's serving certificate (127.0.0.1)
#   DIR/pki/kubelet.{crt,key}                the kubelet's serving certificate (BRIDGE_IP)
#   DIR/pki/apiserver-kubelet-client.*       how the API server authenticates to the kubelet
#   DIR/pki/sa.{key,pub}                     service-account token signing keys
#   DIR/tokens.csv                           bearer tokens: admin, controller manager, scheduler, kubelet
#   DIR/*.kubeconfig                         one kubeconfig per identity
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/local-cluster/env.sh
. "$here/env.sh"
dir=$1
bridge=$2
pki="$dir/pki"
mkdir -p "$pki"
cd "$pki"

ssl() { openssl "$@" 2>/dev/null; }

ssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj "/CN=scotbed-local-ca"

# cert NAME SUBJECT [SAN]: a key and a certificate signed by the CA
cert() {
    local name=$1 subject=$2 san=${3:-}
    ssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "$subject"
    if [[ -n "$san" ]]; then
        printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" >"$name.ext"
    else
        printf 'extendedKeyUsage=clientAuth\n' >"$name.ext"
    fi
    ssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$name.crt" -days 30 \
        -extfile "$name.ext"
    rm -f "$name.csr" "$name.ext"
}

service_ip="${SERVICE_CIDR%.0/*}.1"
cert apiserver "/CN=kube-apiserver" \
    "IP:127.0.0.1,IP:$bridge,IP:$service_ip,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$CLUSTER_DOMAIN"
cert kubelet "/CN=system:node:$NODE_NAME/O=system:nodes" "IP:$bridge,DNS:$NODE_NAME"
cert apiserver-kubelet-client "/CN=kube-apiserver-kubelet-client/O=system:masters"
ssl genrsa -out sa.key 2048
ssl rsa -in sa.key -pubout -out sa.pub
chmod 600 ./*.key

tok() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
admin=$(tok) cm=$(tok) sched=$(tok) node=$(tok)
cat >"$dir/tokens.csv" <<EOF
$admin,scotbed-admin,scotbed-admin,"system:masters"
$cm,system:kube-controller-manager,system:kube-controller-manager
$sched,system:kube-scheduler,system:kube-scheduler
$node,system:node:$NODE_NAME,system:node:$NODE_NAME,"system:nodes"
EOF
chmod 600 "$dir/tokens.csv"

kubeconfig() {
    local file=$1 user=$2 token=$3
    cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $CONTEXT
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(base64 -w0 <ca.crt)
users:
- name: $user
  user:
    token: $token
contexts:
- name: $CONTEXT
  context: {cluster: $CONTEXT, user: $user}
current-context: $CONTEXT
EOF
    chmod 600 "$file"
}
kubeconfig "$dir/admin.kubeconfig" "$CONTEXT-admin" "$admin"
kubeconfig "$dir/controller-manager.kubeconfig" controller-manager "$cm"
kubeconfig "$dir/scheduler.kubeconfig" scheduler "$sched"
kubeconfig "$dir/kubelet.kubeconfig" "$NODE_NAME" "$node"
