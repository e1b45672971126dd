"""The workload's entry point for Locust: the packaged locustfile and the environment it reads.

One locustfile, packaged (:data:`PACKAGED_LOCUSTFILE`): the local runner runs it in place, the
Kubernetes ConfigMap and the standalone compose folder carry its text (:data:`LOCUSTFILE`).
"""

from __future__ import annotations

from pathlib import Path

PLAN_ENV = "SCOTBED_PLAN"  # path of the plan JSON the Locust processes play
RUN_DIR_ENV = "SCOTBED_RUN_DIR"  # run directory they write events/, workload/ and locust/ under

#: the packaged locustfile (this package's ``locustfile.py``); the repository's ``workloads/locustfile.py``
#: is the same text for running Locust by hand (a test keeps them equal)
PACKAGED_LOCUSTFILE = Path(__file__).resolve().with_name("locustfile.py")
LOCUSTFILE = PACKAGED_LOCUSTFILE.read_text()


def locustfile_path() -> Path:
    """The locustfile Locust runs: the packaged one, on disk wherever scotbed is installed."""
    return PACKAGED_LOCUSTFILE
