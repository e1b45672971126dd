#!/usr/bin/env bash
# Download every wheel the broker image needs into .wheelhouse/ for an offline build.
#
# The list comes from pyproject.toml itself (core dependencies, the `broker` extra
# and the build-system requirements, which the image needs to build scotbed from
# its source), so the wheelhouse cannot drift from the package. Wheels are chosen
# for the image's interpreter, not the host's: CPython 3.11 (Debian bookworm's
# python3) on glibc 2.36, for the host's machine architecture unless ARCH is set.
#
# Environment:
#   WHEELHOUSE  output directory (default .wheelhouse)
#   PYTHON      interpreter that runs pip (default .venv/bin/python, else python3)
#   PY_VERSION  target Python (default 3.11)   GLIBC_MINOR  target glibc 2.N (default 36)
#   ARCH        target machine (default: uname -m)
#   EXTRAS      pyproject extras, comma-separated (default broker; broker,workloads adds Locust)
set -euo pipefail

cd "$(dirname "$0")/.."
out="${WHEELHOUSE:-.wheelhouse}"
py_version="${PY_VERSION:-3.11}"
glibc_minor="${GLIBC_MINOR:-36}"
arch="${ARCH:-$(uname -m)}"
python="${PYTHON:-}"
if [[ -z "$python" ]]; then
    if [[ -x .venv/bin/python ]]; then python=.venv/bin/python; else python=python3; fi
fi

start=$(date +%s)
reqs="$(mktemp)"
trap 'rm -f "$reqs"' EXIT
EXTRAS="${EXTRAS:-broker}" "$python" - >"$reqs" <<'EOF'
import os
import tomllib

with open("pyproject.toml", "rb") as f:
    meta = tomllib.load(f)
project = meta["project"]
extras = [r for e in os.environ["EXTRAS"].split(",") for r in project["optional-dependencies"][e]]
for req in [*project["dependencies"], *extras, *meta["build-system"]["requires"]]:
    print(req)
EOF

# pip does not expand manylinux_2_N platform tags, so list every glibc the target satisfies.
platforms=(--platform "manylinux2014_$arch")
for ((n = 17; n <= glibc_minor; n++)); do
    platforms+=(--platform "manylinux_2_${n}_$arch")
done
abi="cp${py_version/./}"

mkdir -p "$out"
echo "build-wheelhouse: $(wc -l <"$reqs") requirements for CPython $py_version/$arch into $out"
"$python" -m pip download --quiet --dest "$out" --only-binary=:all: \
    --implementation cp --python-version "$py_version" --abi "$abi" "${platforms[@]}" \
    -r "$reqs"

echo "build-wheelhouse: $(find "$out" -name '*.whl' | wc -l) wheels, $(du -sh "$out" | cut -f1)" \
    "in $(($(date +%s) - start))s"
