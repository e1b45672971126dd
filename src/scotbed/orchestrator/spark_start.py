"""The Spark session of a run's analysis, started in a background thread once the measurement window
has closed.

``scotbed run`` starts it once the drain has ended (never while a notification of the run may still be
in flight), so the JVM starts beside the phases still to come (the clients' end, collect, teardown) and
the analyse phase pays only for the queries. The JVM is the one :func:`scotbed.analysis.api.jvm_for`
picks by the logs' size. :meth:`SessionStart.result` waits for the start and raises what the start
raised, in the analyse phase.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scotbed import contract
from scotbed.analysis.api import import_code, jvm_for
from scotbed.analysis.rundir import RunDir
from scotbed.analysis.session import Jvm, get_session, is_shared

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class SessionStart:
    """A session starting in a thread; its JVM writes to the run's ``analysis/spark.log`` (with
    ``verbose``, to stderr)."""

    def __init__(self, run_dir: Path, spark_master: str | None = None, verbose: bool = False) -> None:
        from pyspark.sql import SparkSession

        #: whether the run stops the session after its analysis: it started it, and no campaign shares it
        self.own = SparkSession.getActiveSession() is None and not is_shared()
        log = None if verbose else run_dir / contract.SPARK_LOG
        jvm = jvm_for(RunDir(run_dir.resolve()))
        self._session: Future[SparkSession] = Future()
        self._thread = threading.Thread(
            target=self._start, args=(spark_master, jvm, log), name="scotbed-spark-start", daemon=True
        )
        self._thread.start()

    def _start(self, master: str | None, jvm: Jvm, log: Path | None) -> None:
        imports = threading.Thread(target=import_code, name="scotbed-analysis-imports", daemon=True)
        imports.start()
        try:
            session = get_session(master, jvm=jvm, log=log)
            imports.join()
        except BaseException as e:  # raised again by result(), in the caller's thread
            self._session.set_exception(e)
        else:
            self._session.set_result(session)

    def result(self) -> SparkSession:
        return self._session.result()

    def stop(self) -> None:
        """Stop the session if this start created it (once it has started); nothing if the start failed."""
        if self._session.exception() is None and self.own:
            self._session.result().stop()


def analysed(
    started: SessionStart | None, run_dir: Path, master: str | None, verbose: bool
) -> dict[str, Any]:
    """The run's analysis, on the started session when there is one (stopped after it if the start
    created it); a failed start raises here."""
    from scotbed.analysis.api import analyze

    try:
        spark = None if started is None else started.result()
        return analyze(run_dir, spark_master=master, spark=spark, verbose=verbose)
    finally:
        if started is not None:
            started.stop()
