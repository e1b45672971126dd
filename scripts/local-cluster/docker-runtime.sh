#!/usr/bin/env bash
# Register the runc-oom0 wrapper (see that file) with the Docker engine as its default runtime,
# through /etc/docker/daemon.json: a running dockerd reloads runtimes on SIGHUP, so this never
# restarts the engine other users share. Idempotent. `--config-only`: write the file, no signal
# (start-dockerd.sh calls it before starting the engine).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/local-cluster/env.sh
. "$here/env.sh"

install -D -m 0755 "$here/runc-oom0" "$RUNTIME_PATH"
python3 - "$DOCKER_DAEMON_JSON" "$RUNTIME_NAME" "$RUNTIME_PATH" <<'PY'
import json, os, sys
path, name, exe = sys.argv[1:]
cfg = {}
if os.path.exists(path) and os.path.getsize(path):
    with open(path) as f:
        cfg = json.load(f)
want = dict(cfg)
want["runtimes"] = {**cfg.get("runtimes", {}), name: {"path": exe}}
want["default-runtime"] = name
if want != cfg:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(want, f, indent=2)
    os.replace(path + ".tmp", path)
PY
[[ "${1:-}" == --config-only ]] && exit 0

default_runtime() { docker info --format '{{.DefaultRuntime}}' 2>/dev/null; }
if [[ "$(default_runtime)" == "$RUNTIME_NAME" ]]; then
    exit 0
fi
pid=$(pidof dockerd || true)
if [[ -z "$pid" || "$pid" == *" "* ]]; then
    echo "docker-runtime: cannot find the one dockerd to reload (pid: '${pid}')" >&2
    exit 1
fi
kill -HUP "$pid"
for _ in $(seq 1 20); do
    [[ "$(default_runtime)" == "$RUNTIME_NAME" ]] && { echo "docker-runtime: $RUNTIME_NAME is the default runtime"; exit 0; }
    sleep 0.5
done
echo "docker-runtime: dockerd did not take $RUNTIME_NAME as default runtime (see its log)" >&2
exit 1
