"""A SIGTERM during the Spark analysis of `scotbed run` exits 143 with one line, not a Py4JError traceback
(with --log-json a JSON line, like every other), and takes Spark's JVM with it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from scotbed.analysis import session

REPO = Path(__file__).resolve().parents[1]
JVM_GONE_S = 1.0  # a moment after the command exits, nothing it started runs any more
SMALL = [
    "topology.connectivity=1",
    "routing=rpf",
    "workload.subscribers=5",
    "workload.publishers=1",
    "workload.notifications_per_publisher=20",
    "workload.rate_per_minute=1200",
    "workload.drain_s=0.5",
]


def _session_left(sid: int) -> list[psutil.Process]:
    """Processes still running in the session the command led (it was started with a session of its own).

    A zombie runs nothing: it is an exited orphan that a container's PID 1 has not reaped yet."""
    out = []
    for p in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError, PermissionError):
            if os.getsid(p.pid) == sid and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
    return out


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("after_jvm_s", [0.0, 2.0], ids=["while-the-jvm-starts", "inside-a-py4j-call"])
def test_sigterm_during_the_analysis_exits_143_without_a_traceback(
    after_jvm_s: float, tmp_path: Path
) -> None:
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
            start_new_session=True,  # everything it starts stays in its session, orphaned or not
        )
    left: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 300
        while not _spark_jvm_started(proc.pid) and proc.poll() is None:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.05)
        time.sleep(after_jvm_s)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
        time.sleep(JVM_GONE_S)
        left = _session_left(proc.pid)
    finally:
        if proc.poll() is None:
            proc.kill()
        for child in left:  # the test leaves nothing behind, whatever it found
            with contextlib.suppress(psutil.Error):
                child.kill()
    err = log.read_text()
    assert not left, f"outlived the command: {[p.pid for p in left]}"
    assert code == 143, err[-3000:]
    assert "Traceback" not in err and "Py4J" not in err, err[-3000:]
    lines = [json.loads(line) for line in err.splitlines()]  # --log-json: nothing but JSON, even now
    ours = [e["text"] for e in lines if e["event"] == "error"]
    assert ours[-1].startswith("scotbed run: terminated"), err[-3000:]


REAPER_SCENARIO = """
import signal, subprocess, sys, time
from scotbed.analysis import session
code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
child = subprocess.Popen([sys.executable, "-c", code, session.SPARK_JVM_CLASS])
other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
time.sleep(0.5)
start = time.monotonic()
session._reap_jvm()
took = time.monotonic() - start
print(child.wait(timeout=1), other.poll(), took)
other.kill()
"""


def test_the_reaper_stops_a_spark_jvm_child_even_when_pyspark_lost_its_handle() -> None:
    """A stand-in child with Spark's main class on its command line; the reaper finds it and stops it.

    In a process of its own: the reaper stops every Spark JVM child of the process it runs in, and
    this one holds the test session's JVM, which later Spark tests still use."""
    out = subprocess.run(
        [sys.executable, "-c", REAPER_SCENARIO], capture_output=True, text=True, timeout=60, check=True
    )
    child_rc, other_rc, took = out.stdout.split()
    assert int(child_rc) == -signal.SIGKILL  # it ignored SIGTERM: killed after JVM_STOP_S
    assert other_rc == "None"  # not Spark's: left alone
    assert session.JVM_STOP_S <= float(took) < session.JVM_STOP_S + 2


def _spark_jvm_started(pid: int) -> bool:
    """Spark's own JVM (SparkSubmit) runs under the command; not the launcher JVM that builds its command."""
    for p in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if session.SPARK_JVM_CLASS in p.cmdline():
                return True
    return False
