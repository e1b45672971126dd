"""Spark's JVM start: a JVM that exits before reporting its port is started again, a bounded number of
times, and the last failure reaches the caller (real spark-submit, in a subprocess of its own)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def test_a_small_run_starts_a_short_lived_jvm_and_a_large_one_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scotbed.analysis import context
    from scotbed.analysis.api import java_options_for
    from scotbed.analysis.rundir import RunDir
    from scotbed.analysis.session import SHORT_JVM_OPTIONS
    from scotbed.testing.synth import SynthSpec, synthesise

    run = tmp_path / "tiny-20260101T000000-0badc0de"
    synthesise(run, SynthSpec(brokers=1, fanout=2, subscribers=3, symbols=2, publications=5))
    assert java_options_for(RunDir.open(run)) == SHORT_JVM_OPTIONS
    assert "-XX:TieredStopAtLevel=1" in SHORT_JVM_OPTIONS
    monkeypatch.setattr(context, "SMALL_RUN_BYTES", 0)
    assert java_options_for(RunDir.open(run)) == ()
