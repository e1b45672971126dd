#!/usr/bin/env bash
# Build a Python base image from Debian packages, for hosts that cannot pull images.
#
# debootstrap a minimal bookworm root with python3 and python3-venv, then
# `docker import` it. The result has Debian's Python 3.11 at /usr/bin/python3 and
# no pip; broker-image/Dockerfile makes a venv (python3-venv brings ensurepip).
# Idempotent: does nothing when the image already exists (FORCE=1 rebuilds).
#
# Environment:
#   BASE_IMAGE_TAG  image to create (default scotbed-base:bookworm)
#   SUITE           Debian suite (default bookworm; must match the wheelhouse's Python)
#   MIRROR          Debian mirror (default: the host's first deb.debian.org-style source)
#   FORCE           1 = rebuild even when the image exists
set -euo pipefail

tag="${BASE_IMAGE_TAG:-scotbed-base:bookworm}"
suite="${SUITE:-bookworm}"
mirror="${MIRROR:-http://deb.debian.org/debian}"

if [[ "${FORCE:-0}" != 1 ]] && docker image inspect "$tag" >/dev/null 2>&1; then
    echo "build-base-image: $tag exists, skipping (FORCE=1 rebuilds)"
    exit 0
fi
for tool in debootstrap docker tar; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "build-base-image: $tool is missing (apt-get install debootstrap docker.io)" >&2
        exit 1
    fi
done
if [[ "$(id -u)" -ne 0 ]]; then
    echo "build-base-image: debootstrap needs root" >&2
    exit 1
fi

start=$(date +%s)
root="$(mktemp -d /tmp/scotbed-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT

echo "build-base-image: debootstrap $suite from $mirror into $root"
debootstrap --variant=minbase --include=python3,python3-venv "$suite" "$root" "$mirror" \
    >"$root.log" 2>&1 || {
    tail -n 20 "$root.log" >&2
    rm -f "$root.log"
    exit 1
}
rm -f "$root.log"

# Nothing of this is needed at run time; dropping it keeps the image small.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*

tar -C "$root" --numeric-owner -c . |
    docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["/usr/bin/python3"]' \
        --message "debootstrap --variant=minbase $suite + python3, python3-venv" \
        - "$tag" >/dev/null

echo "build-base-image: $tag built in $(($(date +%s) - start))s," \
    "$(docker image inspect --format '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1 / 1e6}')"
