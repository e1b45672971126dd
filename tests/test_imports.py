"""Every module of the package imports: a moved module leaves no import behind that only a run would hit
(mypy is configured to ignore missing imports of third-party packages, and would miss ours)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import scotbed

#: the workload's Locust side: importing Locust patches the standard library with gevent, which would
#: leave every later test of this process (gRPC's threads among them) on gevent's loop
LOCUST_SIDE = ("locustfile", "users", "grpc_user", "coordinator")
ALL = sorted(
    m.name
    for m in pkgutil.walk_packages(scotbed.__path__, "scotbed.")
    if not m.name.endswith(("__main__", "_pb2", "_pb2_grpc"))
)
MODULES = [m for m in ALL if not m.endswith(LOCUST_SIDE)]


@pytest.mark.parametrize("name", MODULES)
def test_module_imports(name: str) -> None:
    importlib.import_module(name)


def test_the_locust_side_imports_in_a_process_of_its_own() -> None:
    """(The locustfile is Locust's entry point: it reads its plan at import, as Locust starts it.)"""
    names = [m for m in ALL if m.endswith(LOCUST_SIDE) and not m.endswith("locustfile")]
    assert len(names) == len(LOCUST_SIDE) - 1
    code = "import importlib, sys; [importlib.import_module(n) for n in sys.argv[1:]]"
    proc = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_importing_the_package_leaves_the_standard_library_unpatched() -> None:
    """No module outside the Locust side imports Locust or gevent (which patch at import)."""
    for name in MODULES:
        importlib.import_module(name)
    assert "gevent.monkey" not in sys.modules or not sys.modules["gevent.monkey"].is_anything_patched()


def test_the_spec_and_campaign_file_name_the_registered_backends() -> None:
    import typing

    from scotbed.experiment.spec import Spec
    from scotbed.orchestrator.backends import REGISTRY
    from scotbed.orchestrator.campaign import CampaignFile

    assert typing.get_args(Spec.model_fields["backend"].annotation) == tuple(REGISTRY)
    campaign = typing.get_args(CampaignFile.model_fields["backend"].annotation)
    assert typing.get_args(campaign[0]) == tuple(REGISTRY)


def test_the_workload_side_reads_its_parameters_without_the_spec_model() -> None:
    """The workload image installs no pydantic: :mod:`scotbed.experiment` loads its spec model on first
    use, so the plan's reader imports the workload parameters alone."""
    code = "import sys, scotbed.workloads.plan_json; assert 'pydantic' not in sys.modules"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
