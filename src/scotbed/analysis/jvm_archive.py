"""The class archive of the analysis's JVM: Spark's classes mapped, not loaded. Where an archive lives
and the JVM option that maps it; :mod:`scotbed.analysis.jvm_archive_build` builds them.

A cold Spark JVM spends seconds loading, parsing and verifying the classes one analysis touches.
A dynamic CDS archive (JDK 13+) holds exactly those classes, pre-parsed and pre-verified. It is dumped
when the JVM of one analysis of a synthesised run exits.

On JDK 25 (:data:`AOT_MAJOR`) the archive is an AOT cache instead (JEPs 483, 514, 515): the classes
also linked, and the method profiles of a training run, so the JIT compiles the hot methods of a large
analysis sooner. A small run's JVM (C1 only, :data:`~scotbed.analysis.session.SHORT_JVM`) maps the same
archive. The figures behind these choices are in ``benchmarks/README.md``.

A file name fingerprints its JDK and the Spark install, so a new JDK or Spark gets a new archive. A JVM
whose archive is missing or unusable runs without it (``-Xshare:auto``, the default): slower, never
wrong.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from scotbed import java

ARCHIVE_DIR = Path(sys.prefix) / "share" / "scotbed"
AOT_MAJOR = 25  # the first JDK with both the one-step AOT cache (JEP 514) and method profiles (JEP 515)


def archive_path(home: Path) -> Path:
    """Where the archive of the JDK at ``home`` and of this Spark lives (``.aot``: an AOT cache,
    ``.jsa``: a CDS archive)."""
    import pyspark

    binary = Path(os.path.realpath(home / "bin" / "java"))
    spark_jars = Path(pyspark.__file__).parent / "jars"
    key = f"{binary}:{binary.stat().st_mtime_ns}:{pyspark.__version__}:{spark_jars.stat().st_mtime_ns}"
    suffix = "aot" if is_aot(home) else "jsa"
    return (
        ARCHIVE_DIR / f"spark-{pyspark.__version__}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.{suffix}"
    )


def is_aot(home: Path) -> bool:
    """Whether the archive of the JDK at ``home`` is an AOT cache (else a CDS archive)."""
    return (java.major(str(home / "bin" / "java")) or 0) >= AOT_MAJOR


def java_options(home: Path) -> tuple[str, ...]:
    """The JVM option that maps the archive of the JDK at ``home``, when it exists."""
    path = archive_path(home)
    if not path.exists():
        return ()
    return (f"-XX:AOTCache={path}",) if path.suffix == ".aot" else (f"-XX:SharedArchiveFile={path}",)
