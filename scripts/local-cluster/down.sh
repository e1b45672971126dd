#!/usr/bin/env bash
# `make local-cluster-down`: stop every process up.sh started, by the pid it recorded (and only if
# that pid still runs the command it started), remove the kubelet's containers, mounts and state,
# restore the kernel tunables the kubelet changed and drop the context from the kubeconfig.
# Idempotent: with nothing up it does nothing. `--quiet`: no message when there was nothing to do.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/local-cluster/env.sh
. "$here/env.sh"
quiet=0
[[ "${1:-}" == --quiet ]] && quiet=1

if [[ ! -d "$CLUSTER_DIR" ]]; then
    ((quiet)) || echo "local-cluster: nothing to stop ($CLUSTER_DIR does not exist)"
    exit 0
fi

# stop NAME: TERM the recorded pid, KILL it after 15 s
stop() {
    local file="$PID_DIR/$1.pid" pid what
    [[ -f "$file" ]] || return 0
    read -r pid what <"$file"
    if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$what"; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 30); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
        echo "local-cluster: stopped $1 (pid $pid)"
    fi
    rm -f "$file"
}

# the nodes first (the kubelet stops its pods' containers no more: remove them below), then the
# controllers, the API server, etcd
for ((i = ${#PROCESSES[@]} - 1; i >= 0; i--)); do
    stop "${PROCESSES[i]}"
done

# containers the kubelet made (dockershim labels every one of them)
if docker info >/dev/null 2>&1; then
    ids=$(docker ps -aq --filter label=io.kubernetes.docker.type)
    if [[ -n "$ids" ]]; then
        # shellcheck disable=SC2086
        docker rm -f $ids >/dev/null
        echo "local-cluster: removed $(echo "$ids" | wc -w) pod containers"
    fi
fi

# volume mounts under the kubelet's root (tmpfs emptyDirs, secrets), deepest first
{ findmnt -rn -o TARGET | grep -F "$CLUSTER_DIR/" || true; } | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" || true
done

if [[ -f "$CLUSTER_DIR/sysctl.saved" ]]; then
    while IFS== read -r k v; do sysctl -q -w "$k=$v" || true; done <"$CLUSTER_DIR/sysctl.saved"
fi

if [[ -x "$CLUSTER_PYTHON" ]]; then
    "$CLUSTER_PYTHON" "$here/kubeconfig.py" remove "$KUBECONFIG_FILE" "$CONTEXT"
fi

# keep the last logs for a post-mortem, drop everything else
rm -rf "$CLUSTER_DIR.logs" && { [[ -d "$LOG_DIR" ]] && mv "$LOG_DIR" "$CLUSTER_DIR.logs" || true; }
rm -rf "$CLUSTER_DIR"
((quiet)) || echo "local-cluster: down (last logs in $CLUSTER_DIR.logs)"
