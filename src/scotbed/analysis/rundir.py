"""The run directory of docs/design.md §5, read from the analysis side.

Only small documents are read here on the driver (spec, topology, the
subscription workload). Event logs and publications are read by Spark
(:mod:`scotbed.analysis.events`), so they may be far larger than driver memory.
On a Spark cluster the run directory must be reachable under the same path
from every executor (a shared filesystem), as for any Spark input.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from scotbed import contract
from scotbed.experiment import spec as experiment
from scotbed.experiment.spec_errors import SpecError

UNNAMED = "unnamed"  # the name of a run directory's spec when it holds none


class RunDirError(ValueError):
    """A run directory that cannot be analysed; the message names the missing part."""


@dataclass(frozen=True)
class RunDir:
    path: Path
    out: Path | None = None  # where the analysis and the report go (None: the run directory)

    @classmethod
    def open(cls, path: str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> RunDir:
        p = Path(path).resolve()
        if not p.is_dir():
            raise RunDirError(f"{p}: not a directory")
        rd = cls(p, Path(out).resolve() if out is not None else None)
        if not rd.event_files():
            raise RunDirError(f"{p}: no event logs under {contract.EVENTS_DIR}/ (*.jsonl or *.jsonl.gz)")
        return rd

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def out_dir(self) -> Path:
        """The folder the analysis writes into: ``analysis/`` and ``report.html`` (the run's by default)."""
        return self.out or self.path

    @property
    def analysis_dir(self) -> Path:
        return self.out_dir / contract.ANALYSIS_DIR

    @property
    def plots_dir(self) -> Path:
        return self.out_dir / contract.PLOTS_DIR

    def event_files(self) -> list[str]:
        pats = ("*.jsonl", "*.jsonl.gz")
        return sorted(f for pat in pats for f in glob.glob(str(self.path / contract.EVENTS_DIR / pat)))

    def event_text_bytes(self, gz_ratio: int = 8) -> int:
        """About how many bytes of JSON text the logs hold (a gzipped log counts ``gz_ratio`` times)."""
        return sum(os.stat(f).st_size * (gz_ratio if f.endswith(".gz") else 1) for f in self.event_files())

    @property
    def subscriptions_file(self) -> Path:
        return self.path / contract.SUBSCRIPTIONS

    @property
    def publications_file(self) -> Path:
        return self.path / contract.PUBLICATIONS

    @property
    def has_spec(self) -> bool:
        return (self.path / contract.SPEC_RESOLVED).exists()

    @cached_property
    def spec(self) -> experiment.Spec:
        """The spec the run ran with, typed (:func:`scotbed.experiment.load_resolved`); a run directory
        without one is read with every default of the model."""
        if not self.has_spec:
            return experiment.Spec(name=UNNAMED)
        try:
            return experiment.load_resolved(self.path)
        except SpecError as e:
            raise RunDirError(str(e)) from None

    @cached_property
    def provenance(self) -> dict[str, Any]:
        """The ``run`` block the orchestrator adds to spec.resolved.yaml (host, versions); empty without."""
        if not self.has_spec:
            return {}
        doc = yaml.safe_load((self.path / contract.SPEC_RESOLVED).read_text())
        block = doc.get(experiment.PROVENANCE) if isinstance(doc, dict) else None
        return block if isinstance(block, dict) else {}

    @cached_property
    def spec_text(self) -> str:
        f = self.path / contract.SPEC_RESOLVED
        return f.read_text() if f.exists() else ""

    @cached_property
    def topology(self) -> dict[str, Any]:
        f = self.path / contract.TOPOLOGY
        if not f.exists():
            return {}
        doc: dict[str, Any] = json.loads(f.read_text())
        return doc

    @property
    def routing(self) -> str:
        return self.spec.routing if self.has_spec else "unknown"

    @property
    def stability_window(self) -> int:
        return self.spec.analysis.stability_window

    def broker_ids(self) -> list[str]:
        return [b["id"] for b in self.topology.get("brokers", [])]

    def topology_counts(self) -> dict[str, int]:
        t = self.topology
        # topology.json's "brokers" is the broker list; the other counts are numbers.
        return {
            k: len(v) if isinstance(v := t.get(k, 0), list) else int(v)
            for k in ("brokers", "clusters", "regions", "acols", "icols")
        }

    def subscription_ops(self) -> list[dict[str, Any]]:
        """Every line of workload/subscriptions.jsonl (small: one per (un)subscription)."""
        f = self.subscriptions_file
        if not f.exists():
            return []
        with f.open() as fh:
            return [json.loads(line) for line in fh if line.strip()]
