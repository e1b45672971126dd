#!/usr/bin/env bash
# Build Kubernetes (API server, scheduler, controller manager, kubelet) and the pause binary from
# Debian's source package, once: the binaries are cached outside the checkout, keyed by version,
# so a second run (or CI on the same machine) skips the ~8 min build. Idempotent.
#
# Environment: SCOTBED_K8S_CACHE (default /var/cache/scotbed)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/local-cluster/env.sh
. "$here/env.sh"

bins=(kube-apiserver kube-scheduler kube-controller-manager kubelet)

have_all() {
    local b
    for b in "${bins[@]}" pause; do [[ -x "$K8S_BIN/$b" ]] || return 1; done
    [[ "$(cat "$K8S_BIN/BUILD" 2>/dev/null)" == "$K8S_BUILD" ]]
}

if have_all; then
    echo "kubernetes $K8S_VERSION: cached in $K8S_BIN"
    exit 0
fi

mkdir -p "$K8S_CACHE_DIR/src"
cd "$K8S_CACHE_DIR/src"

# Debian's source package: the whole v1.20.2 tree, vendor/ included.
if ! ls kubernetes_*.orig.tar.gz >/dev/null 2>&1; then
    srclist=/etc/apt/sources.list.d/scotbed-deb-src.sources
    cat >"$srclist" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    trap 'rm -f "$srclist"' EXIT
    apt-get update -qq
    apt-get source --download-only kubernetes
    rm -f "$srclist"
    trap - EXIT
    apt-get update -qq || true
fi

tree="$K8S_CACHE_DIR/src/tree"
if [[ ! -f "$tree/Makefile" ]]; then
    rm -rf "$tree" && mkdir -p "$tree"
    tar -xzf kubernetes_*.orig.tar.gz -C "$tree" --strip-components=1
fi

cd "$tree"
# The tree vendors reflect2 1.0.1, which crashes under Go >= 1.18 (the API server panics decoding
# maps, in reflect2's Type2): use Debian's reflect2 1.0.2, the upstream fix, in its place.
reflect2=/usr/share/gocode/src/github.com/modern-go/reflect2
[[ -f "$reflect2/go_above_118.go" ]] ||
    { echo "build: install golang-github-modern-go-reflect2-dev (reflect2 >= 1.0.2)" >&2; exit 1; }
if [[ ! -f vendor/github.com/modern-go/reflect2/go_above_118.go ]]; then
    rm -f vendor/github.com/modern-go/reflect2/*.go vendor/github.com/modern-go/reflect2/*.s
    cp "$reflect2"/*.go "$reflect2"/*.s vendor/github.com/modern-go/reflect2/
    rm -f vendor/github.com/modern-go/reflect2/*_test.go
fi
go_bin=$(ls -d /usr/lib/go-1.*/bin | sort -V | tail -1)
# Without rsync the code generators come out empty: start from a clean _output after a failure.
if [[ -d _output && ! -x _output/bin/kubelet ]]; then rm -rf _output; fi
PATH="$go_bin:$PATH" CGO_ENABLED=0 GOPROXY=off GOFLAGS=-mod=vendor \
    make WHAT="cmd/kube-apiserver cmd/kube-scheduler cmd/kube-controller-manager cmd/kubelet" \
    GOLDFLAGS="-s -w"

mkdir -p "$K8S_BIN"
for b in "${bins[@]}"; do install -m 0755 "_output/bin/$b" "$K8S_BIN/$b"; done
gcc -Os -static -o "$K8S_BIN/pause" build/pause/linux/pause.c
echo "$K8S_BUILD" >"$K8S_BIN/BUILD"
echo "kubernetes $K8S_VERSION: built into $K8S_BIN"
