"""The class archive of the analysis's JVM: Spark's classes mapped, not loaded.

A cold Spark JVM spends seconds loading, parsing and verifying the classes one analysis touches.
A dynamic CDS archive (JDK 13+) holds exactly those classes, pre-parsed and pre-verified. It is dumped
when the JVM of one analysis of a synthesised run exits. On `make demo`'s run it halved the
session's start (4.0 to 2.0 s) and the parse of the logs (2.6 to 1.4 s).

On JDK 25 (:data:`AOT_MAJOR`) the archive is an AOT cache instead (JEPs 483, 514, 515): the classes
also linked, and the method profiles of a training run, so the JIT compiles the hot methods of a large
analysis sooner. Its training analyses, with the JIT's defaults, a small run and one of
:data:`TRAINING_PUBLICATIONS` publications on the large-run path. At 1M events a first analysis took
19.3-20.2 s against 22.6-22.9 s on JDK 17 with its CDS archive (21.7-22.2 s on JDK 25 without a
cache), a further one 10.5-12.3 s against 13.3-14.6 s. A small run gains nothing: its JVM compiles
with C1 only, which uses no profiles.

``make setup`` builds it (``python -m scotbed.analysis.jvm_archive --ensure``). Its file name
fingerprints the JDK and the Spark install, so a new JDK or Spark gets a new archive. A JVM whose
archive is missing or unusable runs without it (``-Xshare:auto``, the default): slower, never wrong.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from scotbed import java

ARCHIVE_DIR = Path(sys.prefix) / "share" / "scotbed"
# The JVM writes the archive as it exits: about 200 MB; ten seconds on this 2-core machine for the CDS
# archive, a minute for the AOT cache (a second JVM assembles it from the training's record).
DUMP_TIMEOUT_S = 600.0
AOT_MAJOR = 25  # the first JDK with both the one-step AOT cache (JEP 514) and method profiles (JEP 515)
TRAINING_PUBLICATIONS = 48_000  # of the AOT training's large run: about 0.73M events, 73 MB of text


def archive_path() -> Path | None:
    """Where this JDK's and this Spark's archive lives (``.aot``: an AOT cache, ``.jsa``: a CDS
    archive); None without a JDK."""
    import pyspark

    found = java.java_home()
    if found is None:
        return None
    binary = Path(os.path.realpath(found[0] / "bin" / "java"))
    spark_jars = Path(pyspark.__file__).parent / "jars"
    key = f"{binary}:{binary.stat().st_mtime_ns}:{pyspark.__version__}:{spark_jars.stat().st_mtime_ns}"
    suffix = "aot" if (java.major(str(binary)) or 0) >= AOT_MAJOR else "jsa"
    return (
        ARCHIVE_DIR / f"spark-{pyspark.__version__}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.{suffix}"
    )


def java_options() -> tuple[str, ...]:
    """The JVM option that maps the archive, when it exists."""
    path = archive_path()
    if path is None or not path.exists():
        return ()
    return (f"-XX:AOTCache={path}",) if path.suffix == ".aot" else (f"-XX:SharedArchiveFile={path}",)


def build(dest: Path) -> Path:
    """Dump the archive of the training analyses (:func:`_training_runs`) to ``dest`` (atomically)."""
    from scotbed.analysis import session as spark_session
    from scotbed.analysis.api import analyze

    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f"{dest.name}.{os.getpid()}.partial")
    aot = dest.suffix == ".aot"
    if aot:  # -Xlog: the cache skips the classes of signed jars, with a warning for each
        options: tuple[str, ...] = (f"-XX:AOTCacheOutput={partial}", "-Xlog:aot=off,cds=off")
    else:
        options = (*spark_session.SHORT_JVM_OPTIONS, f"-XX:ArchiveClassesAtExit={partial}", "-Xlog:cds=error")
    with tempfile.TemporaryDirectory(prefix="scotbed-jvm-archive-") as tmp:
        runs = _training_runs(Path(tmp), large=aot)
        spark = spark_session.get_session(java_options=options, archive=False)
        gateway = spark.sparkContext._gateway
        assert gateway is not None, "a local session has a gateway"
        jvm = gateway.proc
        for run in runs:
            analyze(run, spark=spark)
        spark.stop()
        jvm.stdin.close()  # Spark's gateway exits on EOF; the JVM dumps the archive as it exits
        jvm.wait(timeout=DUMP_TIMEOUT_S)
    if not partial.exists():
        raise RuntimeError(f"the JVM exited ({jvm.returncode}) without writing its class archive {partial}")
    os.replace(partial, dest)
    return dest


def _training_runs(tmp: Path, large: bool) -> list[Path]:
    """A small synthesised run and, with ``large``, one on the large-run path (beyond
    :data:`~scotbed.analysis.context.SMALL_RUN_BYTES`)."""
    from scotbed.testing.synth import SCALE, SynthSpec, synthesise

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
    """The archive, built when missing."""
    path = archive_path()
    if path is None:
        raise RuntimeError("no Java 17+ for Spark: run `python -m scotbed.java --ensure` first")
    if path.exists():
        return path
    for stale in [*ARCHIVE_DIR.glob("spark-*.jsa*"), *ARCHIVE_DIR.glob("spark-*.aot*")]:
        stale.unlink()
    started = time.monotonic()
    build(path)
    print(f"Spark class archive: {path} ({time.monotonic() - started:.0f} s to build)", file=sys.stderr)
    return path


def main(argv: list[str]) -> int:
    if "--ensure" not in argv:
        print("usage: python -m scotbed.analysis.jvm_archive --ensure", file=sys.stderr)
        return 2
    print(f"Spark class archive: {ensure()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
