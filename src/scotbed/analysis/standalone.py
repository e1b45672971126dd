"""A Spark standalone cluster on this host: a master and one-core workers started from the installed
PySpark's own launcher (``bin/spark-class``) on loopback, for ``scotbed analyze --spark-master`` to run
on a real cluster (the executors parse the logs and run the tasks; the driver is the caller).

The test of the cluster's summary and the analysis benchmark start one with :func:`local_cluster`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from scotbed import java
from scotbed.ports import free_port

START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class StandaloneCluster:
    url: str  # spark://127.0.0.1:PORT
    directory: Path  # the daemons' logs and the workers' work directories (work-N/app-*/*/stderr)


@contextmanager
def local_cluster(
    directory: Path, workers: int = 2, worker_memory: str = "1g"
) -> Iterator[StandaloneCluster]:
    """A master and ``workers`` registered one-core workers until the block ends; then all stopped."""
    directory.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "JAVA_HOME": str(java.require()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOG_DIR": str(directory),
    }
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    master_log = directory / "master.log"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        master = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port)]
        procs.append(_daemon([*master, "--webui-port", str(free_port())], master_log, env))
        _wait_for(master_log, r"I have been elected leader", 1, procs)
        for i in range(workers):
            worker = ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "1"]
            work = [
                "--memory",
                worker_memory,
                "--webui-port",
                str(free_port()),
                "--work-dir",
                str(directory / f"work-{i}"),
            ]
            procs.append(_daemon([*worker, *work], directory / f"worker-{i}.log", env))
        _wait_for(master_log, r"Registering worker", workers, procs)
        yield StandaloneCluster(url, directory)
    finally:
        _stop(procs)


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _daemon(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([str(_spark_class()), *args], stdout=out, stderr=subprocess.STDOUT, env=env)


def _wait_for(log: Path, pattern: str, count: int, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if len(re.findall(pattern, log.read_text(errors="replace"))) >= count:
            return
        dead = [p.args for p in procs if p.poll() is not None]
        if dead:
            raise RuntimeError(f"a Spark daemon exited: {dead}\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)
    raise RuntimeError(f"no {count}× {pattern!r} in {log} within {START_TIMEOUT_S} s")


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            p.kill()
