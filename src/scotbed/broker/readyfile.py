"""A file that exists exactly while the broker's health service says SERVING.

Kubernetes servers before 1.24 have no gRPC probes; an exec probe that starts Python for a gRPC health
check every few seconds in every pod keeps a small node's CPUs busy. ``cat FILE`` costs nothing, so
the broker mirrors its health status into a file (``--ready-file``) and the probe reads that.
"""

from __future__ import annotations

import os
from pathlib import Path


class ReadyFile:
    """``serving()`` writes the file (atomically, via a rename), ``not_serving()`` removes it; a
    ``None`` path makes both no-ops (brokers outside Kubernetes)."""

    def __init__(self, path: str | None) -> None:
        self.path = Path(path) if path else None

    def serving(self, text: str) -> None:
        if self.path is None:
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        tmp.write_text(text + "\n")
        tmp.replace(self.path)

    def not_serving(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)
