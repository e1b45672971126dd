"""The CI=true hook of tests/conftest.py: a skip of a test that needs a real part fails in CI."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")

PARTS = """
import pytest

@pytest.fixture
def engine():
    pytest.skip("no Docker engine")

@pytest.mark.docker
def test_docker():
    pytest.skip("no base image")

@pytest.mark.spark
def test_chromium():
    pytest.skip("chromium is not installed")

@pytest.mark.k8s
@pytest.mark.skipif(True, reason="SCOTBED_KUBE_CONTEXT is not set")
def test_k8s():
    pass

def test_engine(engine):
    pass

def test_optional():
    pytest.skip("needs nothing CI provides")

@pytest.mark.docker
@pytest.mark.xfail(reason="known")
def test_known_failure():
    assert False

@pytest.mark.docker
def test_passes():
    pass
"""

MODULE_SKIP = """
import pytest

pytest.importorskip("scotbed_no_such_module")

def test_never_collected():
    pass
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makeini("[pytest]\nmarkers =\n    docker\n    k8s\n    spark\n")
    pytester.makepyfile(test_parts=PARTS, test_module_skip=MODULE_SKIP)
    return pytester


def test_in_ci_every_real_part_skip_fails(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    result = suite.runpytest("test_parts.py", "-rfE")
    # a skip in the call fails the test; one in the setup (skipif, a fixture) is an error
    result.assert_outcomes(failed=2, errors=2, skipped=1, xfailed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "FAILED *test_docker - skipped in CI, where every real part must be present:*no base image",
            "FAILED *test_chromium - skipped in CI*chromium is not installed",
            "ERROR *test_k8s - skipped in CI*SCOTBED_KUBE_CONTEXT is not set",
            "ERROR *test_engine - skipped in CI*no Docker engine",
        ]
    )


def test_in_ci_a_module_that_skips_as_a_whole_fails(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    result = suite.runpytest("test_module_skip.py")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*skipped in CI*scotbed_no_such_module*"])


def test_outside_ci_the_skips_stay_skips(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    result = suite.runpytest()
    result.assert_outcomes(skipped=6, xfailed=1, passed=1)


GROUPS = """
import pytest

@pytest.fixture
def engine():
    return "the Docker engine"

def test_local():
    pass

@pytest.mark.k8s
def test_k8s():
    pass

@pytest.mark.parametrize("engine", ["counting", "pst"])
def test_matching_engine(engine):
    pytest.skip("a matching engine is not a real part")

def test_uses_docker(engine):
    pass

@pytest.mark.docker
def test_docker():
    pass
"""


def test_the_engine_tests_are_one_xdist_group_collected_first_and_the_rest_grouped_by_module(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parameter named ``engine`` (a matching engine) is neither the Docker group nor a real part."""
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makeini("[pytest]\nmarkers =\n    docker\n    k8s\n    spark\n")
    pytester.makepyfile(test_groups=GROUPS)
    items, _ = pytester.inline_genitems()
    groups = {item.name: item.get_closest_marker("xdist_group").args[0] for item in items}
    module = "test_groups.py"
    assert groups == {
        "test_local": module,
        "test_k8s": "engine",
        "test_matching_engine[counting]": module,
        "test_matching_engine[pst]": module,
        "test_uses_docker": "engine",
        "test_docker": "engine",
    }
    order = pytester.runpytest("--collect-only", "-q").stdout.lines
    assert [line.split("::")[1] for line in order if "::" in line] == [
        "test_k8s",
        "test_uses_docker",
        "test_docker",
        "test_local",
        "test_matching_engine[counting]",
        "test_matching_engine[pst]",
    ]
    monkeypatch.setenv("CI", "true")
    pytester.runpytest("test_groups.py").assert_outcomes(passed=4, skipped=2)
