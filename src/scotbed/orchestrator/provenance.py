"""The ``run`` block of ``spec.resolved.yaml``: who ran the experiment, where, and with what versions.

The JDK is the analysis's to choose (by the run's size, :func:`scotbed.analysis.api.jvm_for`), so the
block names it only once the run's own analysis has run, as that analysis recorded it in
``summary.json`` (:func:`record_java`): the two never disagree.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from scotbed import contract
from scotbed.experiment.spec import Spec, dump_spec

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
    }
    return yaml.safe_dump(doc, sort_keys=False)


def record_java(run_dir: Path, summary: Mapping[str, Any]) -> None:
    """The JDK the run's analysis ran on, as ``summary`` (its summary.json) names it, into the ``run``
    block of the run's spec.resolved.yaml; nothing when the summary names none."""
    jdk = (summary.get("environment") or {}).get("java")
    if jdk is not None:
        record(run_dir, "java", jdk)


def record(run_dir: Path, key: str, value: Any) -> None:
    """``key: value`` into the ``run`` block of the run's spec.resolved.yaml (nothing without the file)."""
    path = run_dir / contract.SPEC_RESOLVED
    if not path.is_file():
        return
    doc = yaml.safe_load(path.read_text())
    doc.setdefault("run", {})[key] = value
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def _cpus() -> int:
    return os.cpu_count() or 0
