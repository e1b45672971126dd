"""Fixtures several test files share."""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

from scotbed.orchestrator.backends.docker_engine import DockerEngine, EngineUnavailable

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def engine() -> DockerEngine:
    """A reachable Docker engine, or the test is skipped with the reason."""
    e = DockerEngine()
    try:
        e.check()
    except EngineUnavailable as err:
        pytest.skip(f"no Docker engine: {err}")
    return e


#: markers of tests that need a real part (.ci/run provides each one: the Docker engine and compose
#: CLI, the local cluster, Spark with its Java and the headless Chromium); in CI their skip is a failure
REAL_PART_MARKERS = ("docker", "k8s", "spark", "chromium")


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def _needs_real_part(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(m) for m in REAL_PART_MARKERS) or _uses_engine_fixture(item)


def _uses_engine_fixture(item: pytest.Item) -> bool:
    """The test asks for the Docker :func:`engine` fixture (not a parameter of that name, such as a
    matching engine)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return "engine" in getattr(item, "fixturenames", ()) and "engine" not in params


def _fail_skip(report: pytest.TestReport | pytest.CollectReport) -> None:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped in CI, where every real part must be present: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """With CI=true a test that needs a real part and skipped fails instead: CI (.ci/run) provides
    every one, so a skip there means a real part is missing, never a pass."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and _in_ci() and _needs_real_part(item) and not hasattr(report, "wasxfail"):
        _fail_skip(report)


#: the xdist group of the tests that share one engine's or one cluster's capacity: they run one at a
#: time, on one worker, while the other workers run the local tests
ENGINE_GROUP = "engine"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``pytest -n N --dist loadgroup`` (``make test``) a module's tests stay on one worker (its
    module fixtures, often a whole run, run once), and the Docker and Kubernetes tests form one group:
    the local cluster has a few nodes for anti-affinity placement and the image builds share one
    engine's cache, so two of them at once would compete for what each asserts on. A worker takes the
    next group in collection order, so the engine group, the longest, is collected first."""
    if not config.pluginmanager.hasplugin("xdist"):
        return  # the quiet_host tests, alone (make test)
    for item in items:
        group = ENGINE_GROUP if _needs_engine(item) else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: not _needs_engine(item))  # stable: the order within each part stays


def _needs_engine(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(m) for m in ("docker", "k8s")) or _uses_engine_fixture(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    """With CI=true a test module that skips as a whole (``pytest.importorskip("pyspark")``) fails:
    its markers are never read, and its tests would silently vanish from the count."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and _in_ci() and isinstance(collector, pytest.Module):
        _fail_skip(report)


@pytest.fixture(scope="session", autouse=True)
def _own_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Generator[None, None, None]:
    """The test session keeps its run state in its own directory: no test writes into the user's state
    directory, and a `scotbed down` in a test sees only the session's own runs. A test that sets
    SCOTBED_STATE_DIR itself wins."""
    mp = pytest.MonkeyPatch()
    mp.setenv("SCOTBED_STATE_DIR", str(tmp_path_factory.mktemp("scotbed-state")))
    yield
    mp.undo()


@pytest.fixture(params=["memory", "parquet", "uncollected"])
def run_size(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The analysis takes a test's tiny run as small (events cached in memory, rows collected to pandas),
    as large (the Parquet store and the Spark paths, the deliveries collected in receive order) or as
    larger than the driver may collect (the delays and stability windows in Spark): all must give
    the same results."""
    from scotbed.analysis import context, size

    bound = 1 << 40 if request.param == "memory" else 0
    monkeypatch.setattr(context, "IN_MEMORY_BYTES", bound)
    monkeypatch.setattr(size, "SMALL_RUN_BYTES", bound)
    if request.param == "uncollected":
        monkeypatch.setattr(context, "COLLECTED_EVENTS", -1)
    return str(request.param)


@pytest.fixture(scope="session")
def spark() -> Generator[Any, None, None]:
    """One local Spark session for the test session, started by the first test that asks for it; the
    analysis joins the active session. It runs the JVM a small run's analysis runs on
    (:data:`~scotbed.analysis.session.SHORT_JVM`): the tests' runs are all small."""
    from scotbed.analysis.session import SHORT_JVM, get_session

    session = get_session("local[2]", app_name="scotbed-tests", shuffle_partitions=4, jvm=SHORT_JVM)
    yield session
    session.stop()
