"""Fixtures several test files share."""

from __future__ import annotations

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
