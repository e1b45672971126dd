"""The locustfile text, for places where the repository's ``workloads/locustfile.py`` is not on disk.

An installed package (the broker image, a Kubernetes ConfigMap) has no
top-level ``workloads/`` folder; it uses this copy. A test keeps the two equal.
"""

from __future__ import annotations

from pathlib import Path

PLAN_ENV = "SCOTBED_PLAN"  # path of the plan JSON the Locust processes play
RUN_DIR_ENV = "SCOTBED_RUN_DIR"  # run directory they write events/, workload/ and locust/ under
REPO_LOCUSTFILE = Path(__file__).resolve().parents[3] / "workloads" / "locustfile.py"

LOCUSTFILE = '''"""scotbed workload entry for Locust: plays the plan in $SCOTBED_PLAN.

Run by scotbed.workloads.runner (local) or the Locust Jobs (Kubernetes); by hand:
SCOTBED_PLAN=plan.json SCOTBED_RUN_DIR=run locust -f workloads/locustfile.py --headless -u N -r N
"""

from grpc.experimental import gevent as grpc_gevent

grpc_gevent.init_gevent()

from scotbed.workloads.users import Publisher, Subscriber, configure  # noqa: E402

configure()

__all__ = ["Publisher", "Subscriber"]
'''


def locustfile_path(fallback_dir: Path) -> Path:
    """The repository's locustfile if present, else this copy written into ``fallback_dir``."""
    if REPO_LOCUSTFILE.exists():
        return REPO_LOCUSTFILE
    fallback_dir.mkdir(parents=True, exist_ok=True)
    path = fallback_dir / "locustfile.py"
    path.write_text(LOCUSTFILE)
    return path
