#!/usr/bin/env bash
# The broker image and the workload (Locust) image, built from this checkout into the Docker engine
# the local cluster's kubelet runs its pods with: the one real node then has both under the names a
# run uses by default (scotbed.orchestrator.images), and nothing is pushed or loaded (the pods use
# imagePullPolicy IfNotPresent). up.sh calls it on every `make local-cluster`; docker's layer cache
# makes an unchanged checkout quick, and a changed one is in the cluster for the next run.
#
# Environment: OFFLINE (default 1: a debootstrap base image and a host-built wheelhouse, no image
# registry; 0: python:3.11-slim from a registry and PyPI inside the build)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/local-cluster/env.sh
. "$here/env.sh"

offline="${OFFLINE:-1}"
names=$("$CLUSTER_PYTHON" -c \
    'from scotbed.orchestrator.images import BROKER_IMAGE, WORKLOAD_IMAGE; print(BROKER_IMAGE, WORKLOAD_IMAGE)') ||
    { echo "images: $CLUSTER_PYTHON cannot name the images (make setup)" >&2; exit 1; }
read -r broker workload <<<"$names"
make -C "$REPO_DIR" --no-print-directory image OFFLINE="$offline" IMAGE="$broker"
make -C "$REPO_DIR" --no-print-directory image OFFLINE="$offline" IMAGE="$workload" EXTRAS=broker,workloads
for image in "$broker" "$workload"; do
    docker image inspect "$image" >/dev/null 2>&1 || { echo "images: $image was not built" >&2; exit 1; }
done
echo "images: $broker and $workload are in the node's Docker engine"
