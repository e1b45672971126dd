"""Spark's JVM start: a JVM that exits before reporting its port is started again, a bounded number of
times, and the last failure reaches the caller (real spark-submit, in a subprocess of its own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scotbed.analysis.session import GATEWAY_ATTEMPTS

pytestmark = pytest.mark.spark


def test_a_jvm_that_cannot_start_is_tried_again_then_reported() -> None:
    env = dict(os.environ, SCOTBED_SPARK_DRIVER_MEMORY="1x")  # no such heap size: the JVM exits at once
    out = subprocess.run(
        [sys.executable, "-c", "from scotbed.analysis.session import get_session; get_session()"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode != 0
    assert "JAVA_GATEWAY_EXITED" in out.stderr
    retries = [line for line in out.stderr.splitlines() if "starting it again" in line]
    assert len(retries) == GATEWAY_ATTEMPTS - 1, out.stderr[-2000:]


def test_the_api_imports_none_of_the_analysis_s_heavy_modules_so_the_jvm_starts_first() -> None:
    """analyze() imports pandas, pyarrow, pyspark's SQL and the sections while the JVM starts; an import
    of any of them by the API itself would put it back before the start."""
    heavy = ("pandas", "pyarrow", "pyspark", "matplotlib", "scotbed.analysis.pipeline")
    script = f"import sys, scotbed.analysis.api\nprint([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_the_jvm_s_own_output_goes_to_the_log_and_the_retries_are_log_records(tmp_path: Path) -> None:
    """With a log the JVM's complaint (a bad heap size) is in the file, not on the terminal; the retries
    are Python log records, so --log-json shows them as JSON lines."""
    log = tmp_path / "analysis" / "spark.log"
    script = (
        "from pathlib import Path\n"
        "from scotbed.terminal import log_as_json\n"
        "from scotbed.analysis.session import get_session\n"
        "log_as_json()\n"
        "try:\n"
        f"    get_session(log=Path({str(log)!r}))\n"
        "except Exception as e:\n"
        "    print(type(e).__name__)\n"
    )
    env = dict(os.environ, SCOTBED_SPARK_DRIVER_MEMORY="1x")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.stdout == "PySparkRuntimeError\n", out.stderr[-2000:]
    lines = [json.loads(line) for line in out.stderr.splitlines()]
    assert [e["event"] for e in lines] == ["warning"] * (GATEWAY_ATTEMPTS - 1)
    assert all("starting it again" in e["text"] for e in lines)
    assert log.read_text().count("Invalid maximum heap size") == GATEWAY_ATTEMPTS


#: a process that leaves py4j's finalizer thread freeing Java objects without pause while it exits
FREEING_AT_EXIT = """
import threading
from scotbed.analysis.session import get_session
spark = get_session("local[1]", app_name="exit", shuffle_partitions=1)
assert spark.range(3).count() == 3
client = spark.sparkContext._gateway._gateway_client
def free():
    k = 0
    while True:
        k += 1
        client.garbage_collect_object(f"o{k}")  # queued for the finalizer thread, which sends it
threading.Thread(target=free, daemon=True).start()
spark.stop()
"""


def test_the_jvm_stopped_at_exit_leaves_no_py4j_traceback() -> None:
    """At exit the JVM is stopped once py4j's finalizer thread has stopped: a free it was sending when
    the JVM died printed py4j's traceback ("Exception while sending command") after a correct run."""
    out = subprocess.run([sys.executable, "-c", FREEING_AT_EXIT], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]


def test_a_session_started_in_the_background_is_the_analysis_s_and_its_failure_is_raised_there(
    tmp_path: Path,
) -> None:
    """``scotbed run`` starts the analysis's session in a thread once publishing has ended: ``result()``
    gives the session, with its JVM's output in the run's log, or raises what the start raised."""
    bad, good = str(tmp_path / "bad"), str(tmp_path / "good")
    script = (
        "import os\n"
        "from pathlib import Path\n"
        "from scotbed.orchestrator.spark_start import SessionStart\n"
        "os.environ['SCOTBED_SPARK_DRIVER_MEMORY'] = '1x'\n"
        f"bad = SessionStart(Path({bad!r}))\n"
        "try:\n"
        "    bad.result()\n"
        "except Exception as e:\n"
        "    print('raised', type(e).__name__)\n"
        "del os.environ['SCOTBED_SPARK_DRIVER_MEMORY']\n"
        f"good = SessionStart(Path({good!r}))\n"
        "print('own', good.own, good.result().range(3).count())\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines() == ["raised PySparkRuntimeError", "own True 3"], out.stdout
    assert (tmp_path / "bad" / "analysis" / "spark.log").read_text()  # the JVM's complaint, not stderr
    assert "Traceback" not in out.stderr
