"""The output directory a command writes into: checked up front, so a bad ``--out`` is one line, exit 2."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from scotbed import contract
from scotbed import topology as topo
from scotbed.orchestrator.commands import CommandError


def writable_dir(path: Path, option: str = "--out") -> Path:
    """Create ``path`` if needed and prove it takes files; :class:`CommandError` naming why not."""
    if path.exists() and not path.is_dir():
        raise CommandError(f"{option} {path}: is a file, not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".scotbed-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise CommandError(f"{option} {path}: cannot write there: {e.strerror}") from None
    return path


def write_topology(run_dir: Path, scot: topo.Scot, metrics: dict[str, str] | None = None) -> None:
    """The run's ``topology.json``; with ``metrics``, each broker's Prometheus endpoint (``"metrics"``)."""
    doc = {**scot.to_json(), **({"metrics": metrics} if metrics is not None else {})}
    (run_dir / contract.TOPOLOGY).write_text(json.dumps(doc, indent=1))
