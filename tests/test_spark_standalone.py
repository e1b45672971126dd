"""`scotbed analyze --spark-master spark://…` on a real Spark standalone cluster: a master and two
workers started from the installed PySpark's own launcher (``bin/spark-class``) on loopback, and
the same summary as ``local[*]`` gives (the golden file, which ``test_analysis_golden`` holds local
mode to)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_analysis_golden import GOLDEN, comparable, make_run

from scotbed import java

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WORKERS = 2
START_TIMEOUT_S = 120.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _wait_for(log: Path, pattern: str, count: int, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if len(re.findall(pattern, log.read_text(errors="replace"))) >= count:
            return
        dead = [p.args for p in procs if p.poll() is not None]
        assert not dead, f"a Spark daemon exited: {dead}\n{log.read_text(errors='replace')[-3000:]}"
        time.sleep(0.5)
    raise AssertionError(f"no {count}× {pattern!r} in {log} within {START_TIMEOUT_S} s")


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(``spark://127.0.0.1:PORT``, the daemons' directory) of a master with :data:`WORKERS`
    registered one-core workers."""
    tmp = tmp_path_factory.mktemp("spark-standalone")
    env = {
        **os.environ,
        "JAVA_HOME": str(java.require()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOG_DIR": str(tmp),
    }
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    master_log = tmp / "master.log"
    cls = str(_spark_class())
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with master_log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        cls,
                        "org.apache.spark.deploy.master.Master",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        "--webui-port",
                        str(_free_port()),
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
            )
        _wait_for(master_log, r"I have been elected leader", 1, procs)
        for i in range(WORKERS):
            with (tmp / f"worker-{i}.log").open("wb") as out:
                procs.append(
                    subprocess.Popen(
                        [
                            cls,
                            "org.apache.spark.deploy.worker.Worker",
                            url,
                            "--host",
                            "127.0.0.1",
                            "--cores",
                            "1",
                            "--memory",
                            "1g",
                            "--webui-port",
                            str(_free_port()),
                            "--work-dir",
                            str(tmp / f"work-{i}"),
                        ],
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        env=env,
                    )
                )
        _wait_for(master_log, r"Registering worker", WORKERS, procs)
        yield url, tmp
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_analyze_on_a_standalone_cluster_gives_the_local_summary(
    standalone: tuple[str, Path], tmp_path: Path
) -> None:
    url, daemons = standalone
    run = make_run(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "scotbed.orchestrator.cli", "analyze", str(run), "--spark-master", url],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stderr  # the golden run's injected faults: the oracle finds them
    got = comparable(json.loads((run / "analysis" / "summary.json").read_text()))
    want = comparable(json.loads(GOLDEN.read_text()))
    assert set(got) == set(want)
    for section in want:
        assert got[section] == want[section], section
    assert (run / "report.html").is_file()
    executor_logs = [f.read_text(errors="replace") for f in daemons.glob("work-*/app-*/*/stderr")]
    assert sum("Running task" in log for log in executor_logs) >= 1, "no task ran on the cluster's executors"
