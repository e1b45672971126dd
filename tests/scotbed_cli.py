"""Run the real `scotbed` CLI in a subprocess, with its state directory inside the test's tmp_path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

QUICKSTART = Path(__file__).resolve().parents[1] / "experiments" / "quickstart.yaml"


def scotbed(tmp_path: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scotbed.orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "SCOTBED_STATE_DIR": str(tmp_path / "state")},
    )


def run_quickstart(tmp_path: Path, sets: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`scotbed run` of the quickstart spec with ``--set`` overrides, into ``tmp_path/runs``."""
    flags = [a for s in sets for a in ("--set", s)]
    return scotbed(
        tmp_path, "run", str(QUICKSTART), *flags, "--out", str(tmp_path / "runs"), "--quiet", timeout=timeout
    )
