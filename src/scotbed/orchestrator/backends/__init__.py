"""Where brokers run: one module per backend, each added by one line in :data:`BACKENDS`.

A backend class has a ``name``, ``from_options(options, progress)`` (the run's options and progress
reporter: it takes what it needs) and the :class:`~scotbed.orchestrator.backends.base.Backend`
methods. Its module is imported only when a run asks for it, so a local run never loads Docker's or
Kubernetes' clients.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scotbed.orchestrator.backends.base import Backend

#: backend name -> "module:class"
BACKENDS: dict[str, str] = {
    "local": "scotbed.orchestrator.backends.local:LocalBackend",
    "compose": "scotbed.orchestrator.backends.compose:ComposeBackend",
    "k8s": "scotbed.orchestrator.backends.k8s.backend:K8sBackend",
}


def make_backend(name: str, options: Any, progress: Any) -> Backend:
    """The backend ``name`` for a run with ``options`` (:class:`~scotbed.orchestrator.run.RunOptions`)."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; allowed: {', '.join(BACKENDS)}")
    module, cls = BACKENDS[name].split(":")
    backend: Backend = getattr(importlib.import_module(module), cls).from_options(options, progress)
    return backend
