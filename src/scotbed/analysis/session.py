"""Start (or join) the SparkSession the analysis runs in.

Local mode (``local[*]``) by default; any master URL by argument. Under
``spark-submit`` the master comes from spark-submit and is left alone. When
the master is not local, the ``scotbed`` package is zipped and shipped with
``addPyFile`` so executors can import the shared matching engines without a
prior install.

Spark's JVM writes to a log, not to the terminal: its own warnings (a JDK's notes on incubator
modules, options it picked up) and Spark's logging (:data:`LOG4J2`, a package resource: warnings and
errors, one line each) go to the file the caller names, the analysis's ``analysis/spark.log``.
Without one (``scotbed ... --verbose``) they reach this process's stderr. A process starts one JVM,
so every later session in it (a campaign's runs) writes to the first one's log.

Spark's JVM never outlives the command: at exit every Spark JVM this process
launched is stopped (:func:`_reap_jvm`). A SIGTERM inside PySpark's wait for
the JVM's port drops PySpark's only handle on it, and that half-started JVM
never notices its closed stdin, so the reaper finds it among the children.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import tempfile
import threading
import time
import warnings
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scotbed import java
from scotbed.analysis import jvm_archive

logger = logging.getLogger(__name__)
#: Spark's log4j2 configuration: a package resource next to this module
LOG4J2 = Path(__file__).with_name("log4j2.properties")

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SHUFFLE_PARTITIONS_LOCAL = 8
# A loaded host sometimes loses Spark's JVM before it reports its port (JAVA_GATEWAY_EXITED, seen at
# load averages above 80); a second start then succeeds. A JVM that cannot start at all fails every try.
GATEWAY_ATTEMPTS = 3
SPARK_JVM_CLASS = "org.apache.spark.deploy.SparkSubmit"  # the main class on Spark's JVM command line
JVM_STOP_S = 5.0  # what a JVM gets to exit on SIGTERM at our exit before it is killed
# Local mode runs on a few cores with the shuffle partitions already sized to the input
# (:func:`scotbed.analysis.api.analyze`): adaptive execution has nothing to coalesce there, and it
# runs each shuffle stage as a job of its own, which costs more than it saves on the analysis's
# many small queries.
LOCAL_CONF = {"spark.sql.adaptive.enabled": "false"}


@dataclass(frozen=True)
class Jvm:
    """A local analysis JVM's options. Every one runs the one JDK :func:`scotbed.java.java_home` picks
    (a JAVA_HOME the user set decides) and maps that JDK's class archive
    (:mod:`scotbed.analysis.jvm_archive`)."""

    options: tuple[str, ...] = ()


# A JVM that lives for one small or medium analysis (up to size.SHORT_JVM_BYTES of event text: seconds of
# work, about a thousand distinct generated classes) never repays the optimising JIT's compile time: C1 only.
SHORT_JVM = Jvm(("-XX:TieredStopAtLevel=1",))
# A larger analysis keeps the JIT's defaults: its hot loops need C2 (on a JDK 25, the AOT cache holds a
# training run's method profiles). A campaign's shared session starts with its first run's JVM.
LONG_JVM = Jvm()
# A small run's queries are interpreted, not compiled: on a few thousand rows per query, generating and
# compiling Java for every plan (whole-stage code generation, then each expression's own class) costs
# more than it saves.
SMALL_RUN_CONF = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
_shared: list[bool] = []
_reaper: list[bool] = []


def _under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ


def package_zip(dest_dir: Path) -> Path:
    """A zip of the ``scotbed`` package (sources only) for ``SparkContext.addPyFile``."""
    import scotbed

    root = Path(scotbed.__file__).parent
    out = dest_dir / "scotbed.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for f in root.rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".j2", ".typed"):
                z.write(f, Path("scotbed") / f.relative_to(root))
    return out


def get_session(
    master: str | None = None,
    app_name: str = "scotbed-analyze",
    shuffle_partitions: int = SHUFFLE_PARTITIONS_LOCAL,
    jvm: Jvm = LONG_JVM,
    java_options: Sequence[str] = (),
    archive: bool = True,
    log: Path | None = None,
) -> SparkSession:
    """The session; a JVM it starts runs ``jvm``'s JDK with ``jvm``'s options, ``java_options`` and,
    with ``archive``, the options that map that JDK's class archive when it exists, and writes its
    output to ``log`` (appended; None: this process's stderr)."""
    from pyspark.sql import SparkSession

    warnings.filterwarnings(
        "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
    )
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    home = None if _under_spark_submit() else java.require()
    if home is not None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    conf = {
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
    }
    is_local = False
    if master is not None:
        conf["spark.master"] = master
        is_local = master.startswith("local")
    elif not _under_spark_submit():
        conf["spark.master"] = "local[*]"
        is_local = True
    options = [f"-Dlog4j2.configurationFile={LOG4J2}"]
    if is_local:
        # a local Spark talks to itself only; without this it resolves the host name and warns
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        conf["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
        conf["spark.driver.memory"] = os.environ.get("SCOTBED_SPARK_DRIVER_MEMORY", "2g")
        conf.update(LOCAL_CONF)
        options += [
            *jvm.options,
            *java_options,
            *(jvm_archive.java_options(home) if archive and home else ()),
        ]
    if not _under_spark_submit():
        conf["spark.driver.extraJavaOptions"] = " ".join(options)
        if not _reaper:  # before the start: a signal may cut it short
            _reaper.append(True)
            atexit.register(_reap_jvm)
    with java.launching_with(home) if home is not None else contextlib.nullcontext():
        spark = _start(conf, log)
    if not is_local:
        spark.sparkContext.addPyFile(str(package_zip(Path(tempfile.mkdtemp(prefix="scotbed-pyfiles-")))))
    return spark


def _start(conf: dict[str, str], log: Path | None) -> SparkSession:
    from pyspark.errors import PySparkRuntimeError

    for attempt in range(1, GATEWAY_ATTEMPTS + 1):
        try:
            return _launch(conf, log)
        except PySparkRuntimeError as e:
            if e.getCondition() != "JAVA_GATEWAY_EXITED" or attempt == GATEWAY_ATTEMPTS:
                raise
            logger.warning(  # a log record: --log-json shows it as a JSON line
                "scotbed: Spark's JVM exited before reporting its port (try %d of %d); starting it again",
                attempt,
                GATEWAY_ATTEMPTS,
            )
            time.sleep(2.0 * attempt)
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _launch(conf: dict[str, str], log: Path | None) -> SparkSession:
    """The session on a JVM whose stderr is ``log``: PySpark's own gateway launch, given the stream
    (``launch_gateway``'s ``popen_kwargs``), when this process has no JVM yet; else the builder's."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    if log is not None and SparkContext._gateway is None and not _under_spark_submit():
        spark_conf = SparkConf().setAll(list(conf.items()))
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as err:
            gateway = launch_gateway(spark_conf, popen_kwargs={"stderr": err})
        SparkContext(conf=spark_conf, gateway=gateway)
    return SparkSession.builder.config(map=dict[str, Any](conf)).getOrCreate()


def _reap_jvm() -> None:
    """Stop the Spark JVMs among this process's children (terminate, then kill after JVM_STOP_S), once
    py4j's finalizer thread has stopped: it frees Java objects at any moment, and a command of it in
    flight when the JVM died printed py4j's traceback of the reset connection ("Exception while sending
    command") after a correct analysis."""
    import psutil

    _stop_py4j_finalizer()

    jvms = []
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if SPARK_JVM_CLASS in child.cmdline():
                jvms.append(child)
    for jvm in jvms:
        with contextlib.suppress(psutil.Error):
            jvm.terminate()
    _, alive = psutil.wait_procs(jvms, timeout=JVM_STOP_S)
    for jvm in alive:
        with contextlib.suppress(psutil.Error):
            jvm.kill()


def _stop_py4j_finalizer() -> None:
    """Stop py4j's finalizer thread after the command it is sending (the frees still queued are dropped:
    the JVM is about to go); nothing without one."""
    context = sys.modules.get("pyspark.core.context")
    gateway = getattr(getattr(context, "SparkContext", None), "_gateway", None)
    queue = getattr(getattr(gateway, "_gateway_client", None), "finalizer_deque", None)
    if queue is None:
        return
    from py4j.clientserver import SHUTDOWN_FINALIZER_WORKER, FinalizerWorker

    queue.clear()
    queue.append(SHUTDOWN_FINALIZER_WORKER)  # the worker pops from this end next
    for worker in threading.enumerate():
        if isinstance(worker, FinalizerWorker):
            worker.join(timeout=JVM_STOP_S)


def is_shared() -> bool:
    """True inside :func:`shared_session`: an analysis keeps the session it finds."""
    return bool(_shared)


@contextmanager
def shared_session() -> Iterator[None]:
    """Keep one SparkSession across every analysis inside (the runs of a campaign); stop it at the end.

    The session starts with the first analysis, so a campaign that analyses nothing starts none.
    """
    _shared.append(True)
    try:
        yield
    finally:
        _shared.pop()
        if not _shared:
            from pyspark.sql import SparkSession

            active = SparkSession.getActiveSession()
            if active is not None:
                active.stop()
