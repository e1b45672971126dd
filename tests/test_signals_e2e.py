"""A SIGTERM during the Spark analysis of `scotbed run` exits 143 with one line, not a Py4JError traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SMALL = [
    "topology.connectivity=1",
    "routing=rpf",
    "workload.subscribers=5",
    "workload.publishers=1",
    "workload.notifications_per_publisher=20",
    "workload.rate_per_minute=1200",
    "workload.drain_s=0.5",
]


@pytest.mark.slow
@pytest.mark.spark
def test_sigterm_during_the_analysis_exits_143_without_a_traceback(tmp_path: Path) -> None:
    sets = [a for s in SMALL for a in ("--set", s)]
    spec = REPO / "experiments" / "quickstart.yaml"
    log = tmp_path / "stderr.txt"
    out = ["--out", str(tmp_path / "runs"), "--log-json"]
    with log.open(
        "w"
    ) as err_file:  # a file, not a pipe: a Spark JVM that outlives us must not block the test
        proc = subprocess.Popen(
            [sys.executable, "-m", "scotbed.orchestrator.cli", "run", str(spec), *sets, *out],
            stderr=err_file,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "SCOTBED_STATE_DIR": str(tmp_path / "state")},
        )
    try:
        deadline = time.monotonic() + 300
        while '"phase": "analyse"' not in log.read_text() and proc.poll() is None:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        time.sleep(3.0)  # Spark is starting or running: the signal lands inside a py4j call
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = log.read_text()
    assert code == 143, err[-3000:]
    assert "Traceback" not in err and "Py4J" not in err, err[-3000:]
    ours = [line for line in err.splitlines() if line.startswith("scotbed run:")]
    assert ours[-1].startswith("scotbed run: terminated"), err[-3000:]
