#!/usr/bin/env bash
# Create the scotbed kind cluster (1 control plane + 3 workers) if it is absent, build the
# broker image and load it into every node, so `scotbed run SPEC --backend k8s
# --kube-context kind-scotbed` finds it (the pods use imagePullPolicy IfNotPresent).
#
# Idempotent: an existing cluster is reused; the image is rebuilt and reloaded each time.
#
# Environment:
#   KIND_CLUSTER   cluster name (default: the name in manifests/kind-cluster.yaml, scotbed)
#   IMAGE          broker image to build and load (default: what `make image` builds)
#   WORKLOAD_IMAGE image of the Locust Jobs (default scotbed-workloads:VERSION, the broker image + workloads)
#   OFFLINE        1: build the image from the local wheelhouse (passed to make)
#   SKIP_BUILD     1: do not run `make image`, only load an image that already exists
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
config="$here/manifests/kind-cluster.yaml"
cluster="${KIND_CLUSTER:-$(sed -n 's/^name: *//p' "$config")}"
cluster="${cluster:-scotbed}"

need() {
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "kind-up: '$1' is not on PATH. $2" >&2
        exit 1
    fi
}
need docker "Install Docker (kind runs its nodes as containers)."
need kind "Install kind: https://kind.sigs.k8s.io/docs/user/quick-start/#installation"
need kubectl "Install kubectl: https://kubernetes.io/docs/tasks/tools/ (kind itself does not ship it)"
if ! docker info >/dev/null 2>&1; then
    echo "kind-up: the Docker engine does not answer (is dockerd running? try scripts/start-dockerd.sh)" >&2
    exit 1
fi

if kind get clusters 2>/dev/null | grep -qx "$cluster"; then
    echo "kind-up: cluster '$cluster' exists, reusing it"
else
    echo "kind-up: creating cluster '$cluster' from $config"
    kind create cluster --name "$cluster" --config "$config" --wait 120s
fi

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$here/pyproject.toml")
image="${IMAGE:-scotbed-broker:$version}"
workload_image="${WORKLOAD_IMAGE:-scotbed-workloads:$version}"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
    make -C "$here" image IMAGE="$image" ${OFFLINE:+OFFLINE="$OFFLINE"}
    make -C "$here" image IMAGE="$workload_image" EXTRAS=broker,workloads ${OFFLINE:+OFFLINE="$OFFLINE"}
fi
for img in "$image" "$workload_image"; do
    if ! docker image inspect "$img" >/dev/null 2>&1; then
        echo "kind-up: image '$img' does not exist locally; build it with 'make image' (see docs/kubernetes.md)" >&2
        exit 1
    fi
    echo "kind-up: loading $img into every node of '$cluster'"
    kind load docker-image "$img" --name "$cluster"
done

ctx="kind-$cluster"
workers=$(kubectl --context "$ctx" get nodes --no-headers -l '!node-role.kubernetes.io/control-plane' | wc -l)
echo "kind-up: ready: context $ctx, $workers schedulable worker node(s), images $image $workload_image"
echo "  scotbed run experiments/quickstart.yaml --backend k8s --kube-context $ctx"
