"""The backend registry: the one place a backend name (spec ``backend:``, ``--backend``, ``--target``)
is mapped to code.

Adding a backend is one module or package with a class that follows
:class:`~scotbed.orchestrator.backends.base.Backend` (declaring what it can do as class attributes:
``supports_faults``, ``renders``, ``sweeps_unasked``) plus one line in :data:`REGISTRY`. The commands'
lists, ``scotbed down`` and the fault timeline's check all derive from here. A backend's module is
imported only when something asks for that backend, so a local run never loads Docker's or
Kubernetes' clients.

The spec and the campaign file name the allowed backends in their own ``Literal`` (the spec is read
below the orchestrator, which may not import this package); ``tests/test_imports.py`` holds them
equal to :data:`REGISTRY`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from scotbed import contract

if TYPE_CHECKING:
    from scotbed.orchestrator.backends.base import Backend, BackendClass

#: backend name -> "module:Class", in the order the CLI lists them
REGISTRY: dict[str, str] = {
    "local": "scotbed.orchestrator.backends.local:LocalBackend",
    "compose": "scotbed.orchestrator.backends.compose:ComposeBackend",
    "k8s": "scotbed.orchestrator.backends.k8s.backend:K8sBackend",
    contract.SIM_BACKEND: "scotbed.orchestrator.backends.sim.backend:SimBackend",
}


def backend_class(name: str) -> BackendClass:
    """The class registered under ``name``, with its declared capabilities; its ``name`` is set here."""
    if name not in REGISTRY:
        raise ValueError(f"unknown backend {name!r}; allowed: {', '.join(REGISTRY)}")
    module, cls = REGISTRY[name].split(":")
    loaded: BackendClass = getattr(importlib.import_module(module), cls)
    loaded.name = name
    return loaded


def make_backend(name: str, options: Any, progress: Any) -> Backend:
    """The backend ``name`` for a run with ``options`` (:class:`~scotbed.orchestrator.run.RunOptions`)."""
    return backend_class(name).from_options(options, progress)


def rendering() -> list[str]:
    """The backends ``scotbed render --target`` writes files for (those declaring ``renders``)."""
    return [n for n in REGISTRY if backend_class(n).renders]
