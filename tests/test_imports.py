"""Every module of the package imports: a moved module leaves no import behind that only a run would hit
(mypy is configured to ignore missing imports of third-party packages, and would miss ours)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import scotbed

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(scotbed.__path__, "scotbed.")
    # Locust's users patch the standard library with gevent at import: they are imported by real runs
    if not m.name.endswith(("__main__", "_pb2", "_pb2_grpc", "locustfile", "users", "grpc_user"))
)


@pytest.mark.parametrize("name", MODULES)
def test_module_imports(name: str) -> None:
    importlib.import_module(name)


def test_the_spec_and_campaign_file_name_the_registered_backends() -> None:
    import typing

    from scotbed.orchestrator.backends import BACKENDS
    from scotbed.orchestrator.campaign import CampaignFile
    from scotbed.orchestrator.spec import Spec

    assert typing.get_args(Spec.model_fields["backend"].annotation) == tuple(BACKENDS)
    campaign = typing.get_args(CampaignFile.model_fields["backend"].annotation)
    assert typing.get_args(campaign[0]) == tuple(BACKENDS)
