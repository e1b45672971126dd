"""The experiment model (docs/design.md §4): the typed spec, its defaults, loading and validation.

One home for what an experiment is, shared by the orchestrator (which runs it) and the analysis
(which reads a run's ``spec.resolved.yaml`` back through :func:`load_resolved`). Every default of
the spec lives in its models (:mod:`scotbed.experiment.spec`), and every spec error is a
:class:`~scotbed.experiment.spec_errors.SpecError`. Checks that need what only a run has (the
overlay's brokers, the backend, TLS material, the generated workload) are the orchestrator's
(:func:`scotbed.orchestrator.preflight.check`).

The names below load on first use: the workload side imports
:mod:`scotbed.experiment.workload_params` (plain dataclasses) without pydantic, which the Locust
image does not install.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scotbed.experiment.spec import Spec, dump_spec, load_resolved, load_spec, parse_spec
    from scotbed.experiment.spec_errors import SpecError

__all__ = ["Spec", "SpecError", "dump_spec", "load_resolved", "load_spec", "parse_spec"]

_HOMES = {name: "scotbed.experiment.spec" for name in __all__} | {
    "SpecError": "scotbed.experiment.spec_errors"
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
