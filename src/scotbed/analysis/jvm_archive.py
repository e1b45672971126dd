"""The class-data-sharing (CDS) archive of the analysis's JVM: Spark's classes mapped, not loaded.

A cold Spark JVM spends seconds loading, parsing and verifying the classes one analysis touches.
A dynamic CDS archive (JDK 13+) holds exactly those classes, pre-parsed and pre-verified. It is dumped
when the JVM of one analysis of a synthesised run exits. On `make demo`'s run it halved the
session's start (4.0 to 2.0 s) and the parse of the logs (2.6 to 1.4 s).

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
from pathlib import Path

from scotbed import java

ARCHIVE_DIR = Path(sys.prefix) / "share" / "scotbed"
# The JVM writes the archive as it exits: about 190 MB, ten seconds on this 2-core machine.
DUMP_TIMEOUT_S = 300.0


def archive_path() -> Path | None:
    """Where this JDK's and this Spark's archive lives; None without a JDK."""
    import pyspark

    found = java.java_home()
    if found is None:
        return None
    binary = Path(os.path.realpath(found[0] / "bin" / "java"))
    spark_jars = Path(pyspark.__file__).parent / "jars"
    key = f"{binary}:{binary.stat().st_mtime_ns}:{pyspark.__version__}:{spark_jars.stat().st_mtime_ns}"
    return ARCHIVE_DIR / f"spark-{pyspark.__version__}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.jsa"


def java_options() -> tuple[str, ...]:
    """The JVM option that maps the archive, when it exists."""
    path = archive_path()
    return (f"-XX:SharedArchiveFile={path}",) if path is not None and path.exists() else ()


def build(dest: Path) -> Path:
    """Dump the archive of one analysis of a small synthesised run to ``dest`` (atomically)."""
    from scotbed.analysis import session as spark_session
    from scotbed.analysis.api import analyze
    from scotbed.testing.synth import SynthSpec, synthesise

    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f"{dest.name}.{os.getpid()}.partial")
    with tempfile.TemporaryDirectory(prefix="scotbed-jvm-archive-") as tmp:
        run = Path(tmp) / "run"
        synthesise(run, SynthSpec(burst_publications=50, unsubscribe_fraction=0.2, loop_lag_ms=1.0))
        options = (*spark_session.SHORT_JVM_OPTIONS, f"-XX:ArchiveClassesAtExit={partial}", "-Xlog:cds=error")
        spark = spark_session.get_session(java_options=options, archive=False)
        gateway = spark.sparkContext._gateway
        assert gateway is not None, "a local session has a gateway"
        jvm = gateway.proc
        analyze(run, spark=spark)
        spark.stop()
        jvm.stdin.close()  # Spark's gateway exits on EOF; the JVM dumps the archive as it exits
        jvm.wait(timeout=DUMP_TIMEOUT_S)
    if not partial.exists():
        raise RuntimeError(f"the JVM exited ({jvm.returncode}) without writing its class archive {partial}")
    os.replace(partial, dest)
    return dest


def ensure() -> Path:
    """The archive, built when missing."""
    path = archive_path()
    if path is None:
        raise RuntimeError("no Java 17+ for Spark: run `python -m scotbed.java --ensure` first")
    if path.exists():
        return path
    for stale in ARCHIVE_DIR.glob("spark-*.jsa*"):
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
