"""The ``run`` block of ``spec.resolved.yaml``: who ran the experiment, where, and with what versions."""

from __future__ import annotations

import os
import platform
import socket
import sys
from datetime import UTC, datetime
from importlib import metadata

import yaml

from scotbed.orchestrator.spec import Spec, dump_spec

VERSIONED = ("scotbed", "grpcio", "protobuf", "numpy", "locust", "pyspark", "pydantic", "kubernetes")


def versions() -> dict[str, str]:
    out = {}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def resolved_spec_text(spec: Spec, run_id: str, backend: str, sets: list[str]) -> str:
    """The spec after defaults and --set, then a ``run`` block: who, where and with what it ran."""
    from scotbed import java

    doc = yaml.safe_load(dump_spec(spec))
    doc["backend"] = backend
    doc["run"] = {
        "run_id": run_id,
        "started_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "backend": backend,
        "sets": list(sets),
        "host": {
            "name": socket.gethostname(),
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "cpus": _cpus(),
        },
        "versions": versions(),
        "java": java.describe(),
    }
    return yaml.safe_dump(doc, sort_keys=False)


def _cpus() -> int:
    return os.cpu_count() or 0
