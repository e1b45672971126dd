#!/usr/bin/env bash
# The Debian packages the local cluster needs, in one place: `make local-cluster` (up.sh) installs
# the missing ones when it runs as root, and .ci/run installs them together with its own.
#
#   packages.sh list             the cluster's packages, one a line
#   packages.sh missing [PKG..]  those of them and of PKG.. that are not installed, one a line
#   packages.sh install [PKG..]  install those with apt-get (needs root); says which
set -euo pipefail

# Go, reflect2 and rsync build Kubernetes, gcc and libc6-dev the static pause binary (golang-go only
# recommends them), debian-archive-keyring verifies its source package; etcd-server, iptables, socat
# (the kubelet's port-forwards), iproute2, util-linux (nsenter), curl and openssl run the cluster,
# docker.io is its container runtime; make, python3, python3-venv and ca-certificates make the
# checkout's environment (make setup), debootstrap the base of the broker and workload images.
CLUSTER_PACKAGES=(golang-go golang-github-modern-go-reflect2-dev rsync gcc libc6-dev debian-archive-keyring
    etcd-server iptables socat iproute2 util-linux curl openssl docker.io
    make python3 python3-venv ca-certificates debootstrap)

installed() {
    [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]] && return 0
    # a Docker engine from another package (docker-ce) serves as well; apt would replace it
    [[ "$1" == docker.io ]] && command -v dockerd >/dev/null 2>&1
}

missing() {
    local p
    for p in "${CLUSTER_PACKAGES[@]}" "$@"; do
        installed "$p" || echo "$p"
    done | awk '!seen[$0]++'
}

install() {
    local todo
    mapfile -t todo < <(missing "$@")
    ((${#todo[@]} > 0)) || return 0
    if [[ "$(id -u)" -ne 0 ]]; then
        echo "packages: missing ${todo[*]}; install them as root: apt-get install ${todo[*]}" >&2
        return 1
    fi
    command -v apt-get >/dev/null 2>&1 ||
        { echo "packages: missing ${todo[*]} and no apt-get to install them with" >&2; return 1; }
    echo "packages: installing ${todo[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${todo[@]}" >/dev/null
}

case "${1:-}" in
    list) printf '%s\n' "${CLUSTER_PACKAGES[@]}" ;;
    missing) shift && missing "$@" ;;
    install) shift && install "$@" ;;
    *) echo "usage: $0 list | missing [PKG...] | install [PKG...]" >&2 && exit 2 ;;
esac
