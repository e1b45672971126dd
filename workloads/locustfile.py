"""scotbed workload entry for Locust: plays the plan in $SCOTBED_PLAN.

Run by scotbed.workloads.runner (local) or the Locust Jobs (Kubernetes); by hand:
SCOTBED_PLAN=plan.json SCOTBED_RUN_DIR=run locust -f workloads/locustfile.py --headless -u N -r N
"""

from scotbed.workloads.grpc_user import init_gevent

init_gevent()

from scotbed.workloads.users import Publisher, Subscriber, configure  # noqa: E402

configure()

__all__ = ["Publisher", "Subscriber"]
