"""A participant that dies or freezes mid-run is named within seconds and fails the run with exit 3.

Real `scotbed run`s on local processes: once the publishers are released, the test SIGSTOPs a
broker, or SIGKILLs the Locust master or a worker (found in the run's state file), and the run must
end within seconds of it (its ``timeouts.run_s`` is minutes), exit 3, with a message that names the
participant and what happened to it, and no traceback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scotbed_cli import QUICKSTART

from scotbed import contract

SETS = [
    "topology.kind=tree",
    "topology.connectivity=1",
    "topology.acyclic={kind: path, n: 2}",
    "routing=rpf",
    "workload.placement={mode: explicit, brokers: {p0: b-v0-0, s0: b-v1-0, s1: b-v1-0}}",
    "workload.subscribers=2",
    "workload.publishers=1",
    "workload.selectivity=0.3",
    "workload.notifications_per_publisher=120",
    "workload.rate_per_minute=120",  # a minute of publishing: the fault lands well inside it
    "timeouts.run_s=240",
]
DETECTED_WITHIN_S = 45.0  # from the signal to the run's exit, teardown included, on a loaded host


def _start(tmp_path: Path) -> subprocess.Popen[str]:
    flags = [a for s in SETS for a in ("--set", s)]
    cmd = [sys.executable, "-m", "scotbed.orchestrator.cli", "run", str(QUICKSTART), *flags]
    cmd += ["--out", str(tmp_path / "runs"), "--quiet", "--workers", "1"]
    env = {**os.environ, "SCOTBED_STATE_DIR": str(tmp_path / "state")}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _publishing_pid(tmp_path: Path, proc: subprocess.Popen[str], role: str, timeout_s: float = 180) -> int:
    """The pid of the run's process ``role`` once the publishers are publishing."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        for status in (tmp_path / "runs").glob(f"*/{contract.LOCUST_DIR}/status.json"):
            try:
                phase = json.loads(status.read_text()).get("phase")
            except json.JSONDecodeError:
                continue
            if phase != "publishing":
                continue
            for state in (tmp_path / "state").glob("*.json"):
                roles = {p["role"]: p["pid"] for p in json.loads(state.read_text())["processes"]}
                if role in roles:
                    return int(roles[role])
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"no {role} while publishing within {timeout_s} s")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("role", "sig", "named"),
    [
        ("broker:b-v1-0", signal.SIGSTOP, "broker(s) stopped during the run: b-v1-0: frozen (pid"),
        ("locust-master", signal.SIGKILL, "publish: the Locust master (pid {pid}) killed by SIGKILL"),
        ("locust-worker-0", signal.SIGKILL, "publish: Locust worker 0 (pid {pid}) killed by SIGKILL"),
    ],
    ids=["frozen-broker", "killed-master", "killed-worker"],
)
def test_a_frozen_or_killed_participant_is_named_and_fails_the_run_with_exit_3(
    role: str, sig: signal.Signals, named: str, tmp_path: Path
) -> None:
    proc = _start(tmp_path)
    try:
        pid = _publishing_pid(tmp_path, proc, role)
        os.kill(pid, sig)
        hit = time.monotonic()
        _, stderr = proc.communicate(timeout=300)
        took = time.monotonic() - hit
    finally:
        if proc.poll() is None:
            proc.kill()
    print(f"{role}: {took:.1f} s: {stderr.strip().splitlines()[0]}")
    assert proc.returncode == 3, stderr[-3000:]
    assert named.format(pid=pid) in stderr, stderr[-3000:]
    assert "Traceback" not in stderr
    assert took < DETECTED_WITHIN_S, f"the run ended {took:.0f} s after the signal"
    if sig == signal.SIGSTOP:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # the teardown removed the frozen broker too
