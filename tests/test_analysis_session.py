"""Spark's JVM start: a JVM that exits before reporting its port is started again, a bounded number of
times, and the last failure reaches the caller (real spark-submit, in a subprocess of its own)."""

from __future__ import annotations

import os
import subprocess
import sys

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
