"""Fixtures several test files share."""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

from scotbed.orchestrator.backends.docker_engine import DockerEngine, EngineUnavailable


@pytest.fixture(scope="module")
def engine() -> DockerEngine:
    """A reachable Docker engine, or the test is skipped with the reason."""
    e = DockerEngine()
    try:
        e.check()
    except EngineUnavailable as err:
        pytest.skip(f"no Docker engine: {err}")
    return e


#: markers of tests that need a real part (.ci/run provides each one); in CI their skip is a failure
REAL_PART_MARKERS = ("docker", "k8s", "chromium")


def _needs_real_part(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(m) for m in REAL_PART_MARKERS) or "engine" in getattr(
        item, "fixturenames", ()
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """With CI=true a test that needs Docker, Kubernetes or Chromium and skipped fails instead: CI
    (.ci/run) starts the engine and the local cluster and installs the browser, so a skip there means
    a real part is missing, never a pass."""
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and os.environ.get("CI", "").lower() == "true" and _needs_real_part(item)):
        return
    if hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped in CI, where every real part must be present: {reason}"
