"""Build the class archive of the analysis's JDK (:mod:`scotbed.analysis.jvm_archive`), dumped by a JVM
that has run training analyses of synthesised runs (:mod:`scotbed.analysis.synth`).

``make setup`` builds it (``python -m scotbed.analysis.jvm_archive_build --ensure``) in a process of
its own, as PySpark starts one gateway per process.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from scotbed import java
from scotbed.analysis import jvm_archive
from scotbed.analysis import session as spark_session
from scotbed.analysis.api import analyze
from scotbed.analysis.jvm_archive import ARCHIVE_DIR
from scotbed.analysis.synth import SCALE, SynthSpec, synthesise

BUILD_LOG = ARCHIVE_DIR / "build.log"  # the output of the training JVMs of the last --ensure
# The JVM writes the archive as it exits: about 200 MB; ten seconds on this 2-core machine for the CDS
# archive, a minute for the AOT cache (a second JVM assembles it from the training's record).
DUMP_TIMEOUT_S = 600.0
TRAINING_PUBLICATIONS = 48_000  # of the AOT training's large run: about 0.73M events, 73 MB of text


def build(dest: Path, home: Path) -> Path:
    """Dump the archive of the JDK at ``home`` after its training analyses (:func:`training_runs`) to
    ``dest`` (atomically). A CDS archive's training JVM is a small run's (C1 only), an AOT cache's keeps
    the JIT's defaults, whose profiles it records. The JVM exits for the dump, and PySpark launches one
    gateway per process: no Spark session can start in this process after it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f"{dest.name}.{os.getpid()}.partial")
    aot = jvm_archive.is_aot(home)
    if aot:  # -Xlog: the cache skips the classes of signed jars, with a warning for each
        options: tuple[str, ...] = (f"-XX:AOTCacheOutput={partial}", "-Xlog:aot=off,cds=off")
    else:
        options = (*spark_session.SHORT_JVM.options, f"-XX:ArchiveClassesAtExit={partial}", "-Xlog:cds=error")
    jvm = spark_session.Jvm(options)
    with tempfile.TemporaryDirectory(prefix="scotbed-jvm-archive-") as tmp:
        runs = training_runs(Path(tmp), large=aot)
        spark = spark_session.get_session(jvm=jvm, archive=False, log=BUILD_LOG)
        gateway = spark.sparkContext._gateway
        assert gateway is not None, "a local session has a gateway"
        process = gateway.proc
        for run in runs:
            analyze(run, spark=spark)
        spark.stop()
        process.stdin.close()  # Spark's gateway exits on EOF; the JVM dumps the archive as it exits
        process.wait(timeout=DUMP_TIMEOUT_S)
    if not partial.exists():
        raise RuntimeError(f"the JVM exited ({process.returncode}) without writing its archive {partial}")
    os.replace(partial, dest)
    return dest


def training_runs(tmp: Path, large: bool) -> list[Path]:
    """A small synthesised run and, with ``large``, one on the large-run path (beyond
    :data:`~scotbed.analysis.size.SMALL_RUN_BYTES`)."""
    specs = [SynthSpec(burst_publications=50, unsubscribe_fraction=0.2, loop_lag_ms=1.0)]
    if large:
        specs.append(
            replace(
                SCALE,
                publications=TRAINING_PUBLICATIONS,
                burst_publications=200,
                unsubscribe_fraction=0.2,
                loop_lag_ms=1.0,
            )
        )
    runs = [tmp / f"run-{k}" for k in range(len(specs))]
    for run, spec in zip(runs, specs, strict=True):
        synthesise(run, spec)
    return runs


def ensure() -> Path:
    """The archive of the analysis's JDK (:func:`scotbed.java.require`), built when missing; any other
    archive (of another JDK or Spark) removed. One ``ensure`` at a time per environment (a lock file):
    a second waits for the first's archive instead of building its own beside it."""
    home = java.require()
    path = jvm_archive.archive_path(home)
    ARCHIVE_DIR.mkdir(parents=True, exist_ok=True)
    with (ARCHIVE_DIR / ".ensure.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for stale in [*ARCHIVE_DIR.glob("spark-*.jsa*"), *ARCHIVE_DIR.glob("spark-*.aot*")]:
            if stale != path:
                stale.unlink()
        BUILD_LOG.unlink(missing_ok=True)
        if not path.exists():  # in a process of its own: PySpark starts one gateway per process
            started = time.monotonic()
            build = [sys.executable, "-m", __spec__.name, "--build", str(home), str(path)]
            if subprocess.run(build).returncode != 0:
                raise RuntimeError(f"building {path} failed; the JVM's output is in {BUILD_LOG}")
            took = time.monotonic() - started
            print(f"Spark class archive: {path} ({took:.0f} s to build)", file=sys.stderr)
    return path


def main(argv: list[str]) -> int:
    if argv[:1] == ["--build"] and len(argv) == 3:
        build(Path(argv[2]), Path(argv[1]))
        return 0
    if argv != ["--ensure"]:
        print(
            "usage: python -m scotbed.analysis.jvm_archive_build --ensure | --build JAVA_HOME DEST",
            file=sys.stderr,
        )
        return 2
    print(f"Spark class archive: {ensure()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
