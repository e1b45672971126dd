"""Spark's JVM start: a JVM that exits before reporting its port is started again, a bounded number of
times, and the last failure reaches the caller (real spark-submit, in a subprocess of its own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def test_a_small_or_medium_run_starts_a_short_lived_jvm_and_a_large_one_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scotbed.analysis import size
    from scotbed.analysis.api import jvm_for
    from scotbed.analysis.rundir import RunDir
    from scotbed.analysis.session import LONG_JVM, SHORT_JVM
    from scotbed.analysis.synth import SynthSpec, synthesise

    run = tmp_path / "tiny-20260101T000000-0badc0de"
    synthesise(run, SynthSpec(brokers=1, fanout=2, subscribers=3, symbols=2, publications=5))
    assert jvm_for(RunDir.open(run)) == SHORT_JVM
    assert "-XX:TieredStopAtLevel=1" in SHORT_JVM.options
    assert size.SMALL_RUN_BYTES < size.SHORT_JVM_BYTES
    monkeypatch.setattr(size, "SMALL_RUN_BYTES", 0)  # a medium run: large-run path, short JVM
    assert not size.is_small(RunDir.open(run)) and jvm_for(RunDir.open(run)) == SHORT_JVM
    monkeypatch.setattr(size, "SHORT_JVM_BYTES", 0)
    assert jvm_for(RunDir.open(run)) == LONG_JVM
    assert LONG_JVM.options == ()


def test_the_api_imports_none_of_the_analysis_s_heavy_modules_so_the_jvm_starts_first() -> None:
    """analyze() imports pandas, pyarrow, pyspark's SQL and the sections while the JVM starts; an import
    of any of them by the API itself would put it back before the start."""
    heavy = ("pandas", "pyarrow", "pyspark", "matplotlib", "scotbed.analysis.pipeline")
    script = f"import sys, scotbed.analysis.api\nprint([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("jvm", ["SHORT_JVM", "LONG_JVM"])
def test_each_analysis_jvm_maps_spark_classes_from_the_archive_make_setup_built(
    jvm: str, tmp_path: Path
) -> None:
    """Each JVM (a small run's, a large run's) runs the one JDK and maps its archive."""
    from scotbed import java
    from scotbed.analysis import jvm_archive

    home = java.require()
    archive = jvm_archive.archive_path(home)
    assert archive.exists(), f"make setup builds {archive}"
    log = tmp_path / "class-load.log"
    script = (
        "from scotbed.analysis.session import get_session, " + jvm + "\n"
        f"s = get_session(jvm={jvm}, java_options=('-Xlog:class+load=info:file={log}',))\n"
        "assert s.range(5).selectExpr('sum(id)').first()[0] == 10\n"
        "print(s.sparkContext._jvm.java.lang.System.getProperty('java.home'))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert Path(out.stdout.split()[-1]).resolve() == home.resolve()
    # Spark's named classes (lambda proxies are generated at run time, never loaded from a file)
    lines = log.read_text().splitlines()
    spark_classes = [line for line in lines if " org.apache.spark." in line and "$$Lambda" not in line]
    from_jars = [line for line in spark_classes if "source: shared objects file" not in line]  # CDS or AOT
    assert len(spark_classes) > 1000
    assert len(from_jars) < 0.05 * len(spark_classes), from_jars[:5]


def test_a_small_run_s_sql_settings_hold_for_its_analysis_only(
    tmp_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scotbed.analysis import api, pipeline, size
    from scotbed.analysis.session import SMALL_RUN_CONF
    from scotbed.analysis.synth import SynthSpec, synthesise

    run = tmp_path / "tiny-20260101T000000-0badc0de"
    synthesise(run, SynthSpec(brokers=1, fanout=2, subscribers=3, symbols=2, publications=5))
    in_force: list[dict[str, str]] = []
    inner = pipeline.analyze

    def seen(session: Any, *args: Any) -> dict[str, Any]:
        in_force.append({k: session.conf.get(k) for k in SMALL_RUN_CONF})
        return inner(session, *args)

    monkeypatch.setattr(pipeline, "analyze", seen)
    # a shared session's own settings: Spark's defaults, compiled queries
    outside = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}
    assert set(outside) == set(SMALL_RUN_CONF) and all(outside[k] != v for k, v in SMALL_RUN_CONF.items())
    for k, v in outside.items():
        spark.conf.set(k, v)
    assert api.analyze(run, spark=spark)["correctness"]["ok"] is True
    monkeypatch.setattr(size, "SMALL_RUN_BYTES", 0)  # the same run, taken as large
    assert api.analyze(run, spark=spark)["correctness"]["ok"] is True
    assert in_force == [SMALL_RUN_CONF, outside]
    assert {k: spark.conf.get(k) for k in SMALL_RUN_CONF} == outside


def test_the_aot_cache_trains_on_a_small_run_and_one_on_the_large_run_path(tmp_path: Path) -> None:
    """The cache's profiles cover both paths only if the large training run really takes the large one."""
    from scotbed.analysis import jvm_archive_build
    from scotbed.analysis.rundir import RunDir
    from scotbed.analysis.size import is_small

    runs = jvm_archive_build.training_runs(tmp_path, large=True)
    assert [is_small(RunDir.open(run)) for run in runs] == [True, False]


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
