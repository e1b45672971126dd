#!/usr/bin/env bash
# Make sure a Docker engine answers: start dockerd in the background when none does.
#
# Bounded: gives up after DOCKERD_TIMEOUT seconds per attempt and exits 1 with the
# tail of the daemon's log, so callers (.ci/run) can carry on and let the docker
# tests skip. The daemon keeps running after this script exits, on purpose: the
# test suite that follows needs it.
#
# Environment:
#   DOCKERD_TIMEOUT  seconds to wait for `docker info` per attempt (default 60)
#   DOCKERD_LOG      daemon log file (default /tmp/scotbed-dockerd.log)
#   DOCKERD_ARGS     extra dockerd arguments for the first attempt (default none)
set -euo pipefail

timeout_s="${DOCKERD_TIMEOUT:-60}"
log="${DOCKERD_LOG:-/tmp/scotbed-dockerd.log}"

engine_answers() {
    docker info >/dev/null 2>&1
}

if ! command -v docker >/dev/null 2>&1; then
    echo "start-dockerd: no docker CLI on PATH (install docker.io)" >&2
    exit 1
fi
if engine_answers; then
    echo "start-dockerd: engine already answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
    exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
    echo "start-dockerd: no engine answers and no dockerd binary to start" >&2
    exit 1
fi

sudo_cmd=()
if [[ "$(id -u)" -ne 0 ]]; then
    if sudo -n true 2>/dev/null; then
        sudo_cmd=(sudo -n)
    else
        echo "start-dockerd: not root and no password-less sudo; cannot start dockerd" >&2
        exit 1
    fi
fi

# Starts one dockerd with the given arguments and waits for it; on failure stops
# that daemon (only the pid we started) and returns 1.
try_start() {
    local pid waited=0
    echo "start-dockerd: starting dockerd${*:+ $*} (log: $log)"
    # setsid: the daemon must not die with this script's process group.
    "${sudo_cmd[@]}" setsid dockerd "$@" >>"$log" 2>&1 </dev/null &
    pid=$!
    while ((waited < timeout_s)); do
        if engine_answers; then
            echo "start-dockerd: engine up after ${waited}s ($(docker version --format '{{.Server.Version}}'))"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "start-dockerd: dockerd exited early" >&2
            break
        fi
        sleep 1
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        "${sudo_cmd[@]}" kill "$pid" 2>/dev/null || true
        # Give it a moment to release /var/run/docker.pid before the next attempt.
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$pid" 2>/dev/null || break
            sleep 1
        done
    fi
    tail -n 15 "$log" >&2 || true
    return 1
}

# The kubelet of `make local-cluster` needs the runc wrapper as the engine's default runtime; it is
# harmless for every other container, so the engine gets it from the start (no restart later).
"${sudo_cmd[@]}" "$(dirname "$0")/local-cluster/docker-runtime.sh" --config-only ||
    echo "start-dockerd: could not register the runc wrapper; make local-cluster will retry" >&2

read -r -a first_args <<<"${DOCKERD_ARGS:-}"
if try_start "${first_args[@]}"; then
    exit 0
fi
# Nested or restricted hosts (CI containers) often lack overlayfs or iptables;
# vfs storage and no iptables are slower and less isolated but work there.
if try_start --storage-driver=vfs --iptables=false --ip6tables=false; then
    exit 0
fi
echo "start-dockerd: could not start a Docker engine; docker tests will be skipped" >&2
exit 1
