"""`scotbed analyze --spark-master spark://…` on a real Spark standalone cluster: a master and two
workers started from the installed PySpark's own launcher (``bin/spark-class``) on loopback, and
the same summary as ``local[*]`` gives (the golden file, which ``test_analysis_golden`` holds local
mode to)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_analysis_golden import GOLDEN, comparable, make_run

from scotbed.analysis.standalone import local_cluster

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WORKERS = 2


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(``spark://127.0.0.1:PORT``, the daemons' directory) of a master with :data:`WORKERS`
    registered one-core workers."""
    with local_cluster(tmp_path_factory.mktemp("spark-standalone"), WORKERS) as cluster:
        yield cluster.url, cluster.directory


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
