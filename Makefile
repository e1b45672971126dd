# scotbed — the README's two commands are `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: setup venv demo test test-fast fuzz lint proto schemas image base-image wheelhouse kind-up local-cluster local-cluster-down clean

# The Spark class archive (scotbed.analysis.jvm_archive_build) is built once per JDK and Spark install.
setup: venv
	$(BIN)/python -m scotbed.analysis.jvm_archive_build --ensure

# The Python environment alone (.ci/run builds the class archive beside the images and the cluster).
venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[all]'
	$(BIN)/python -m scotbed.java --ensure
	touch $@

demo: setup
	$(BIN)/scotbed run experiments/quickstart.yaml

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# Workers: the Docker and Kubernetes tests run one at a time on one of them, each module's tests stay
# on one worker (tests/conftest.py); most tests wait on processes, engines and the API server. The
# tests that measure delays on broker processes (quiet_host) run afterwards, alone on the host, after
# the command BEFORE_QUIET_HOST (.ci/run stops its local Kubernetes cluster there: a control plane
# and its pods beside the brokers are load the delays would measure).
TEST_WORKERS ?= 2
BEFORE_QUIET_HOST ?= true
test: setup lint
	$(BIN)/pytest -q -ra --durations=30 -n $(TEST_WORKERS) --dist loadgroup -m "not quiet_host"
	$(BEFORE_QUIET_HOST)
	$(BIN)/pytest -q -ra --durations=10 -p no:xdist -m quiet_host

# The fuzz tests (also in `make test`: 60 examples each, the oracle's property 300) with a longer budget.
FUZZ_EXAMPLES ?= 3000
fuzz: setup
	SCOTBED_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -q -m fuzz tests/test_fuzz.py tests/test_oracle_property.py

test-fast: setup
	$(BIN)/pytest -q -m "not slow and not docker and not spark and not quiet_host"

# The spec's and the campaign file's JSON Schemas (tests/test_schemas.py keeps them current).
schemas: setup
	$(BIN)/python -m scotbed.orchestrator.schemas docs/schemas

proto: setup
	$(BIN)/python -m grpc_tools.protoc -Isrc --python_out=src --pyi_out=src --grpc_python_out=src src/scotbed/v1/scotbed.proto

# Broker image. OFFLINE=1: no registry needed (Debian base from debootstrap + a host-built wheelhouse).
IMAGE ?= scotbed-broker:$(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
OFFLINE ?= 0
# broker,workloads: the image the top-level docker-compose.yml's Locust services need
EXTRAS ?= broker
BASE_IMAGE ?= $(if $(filter 1,$(OFFLINE)),scotbed-base:bookworm,python:3.11-slim)

image: $(if $(filter 1,$(OFFLINE)),base-image wheelhouse)
	docker build --force-rm -f broker-image/Dockerfile --build-arg BASE_IMAGE=$(BASE_IMAGE) \
		--build-arg WHEELHOUSE=$(OFFLINE) --build-arg EXTRAS=$(EXTRAS) $(if $(filter 1,$(OFFLINE)),--network none) -t $(IMAGE) .

base-image:
	scripts/build-base-image.sh

wheelhouse:
	EXTRAS=$(EXTRAS) scripts/build-wheelhouse.sh

# A multi-node kind cluster (manifests/kind-cluster.yaml) with the broker image loaded; see docs/kubernetes.md.
kind-up: setup
	scripts/kind-up.sh

# A real Kubernetes v1.20 on this machine, built once from Debian's source package (cached in
# /var/cache/scotbed), its node holding the broker and workload images; context scotbed-local. The
# Debian packages it needs (scripts/local-cluster/packages.sh) come first: the Python environment (its DNS
# and fake nodes are Python) needs some of them. See docs/kubernetes.md.
local-cluster:
	scripts/local-cluster/packages.sh install
	$(MAKE) --no-print-directory venv
	scripts/local-cluster/up.sh

local-cluster-down:
	scripts/local-cluster/down.sh

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache
