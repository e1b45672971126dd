"""The Locust process's shared clients: one per broker, renewed once per lost session, all closed.

Each check runs in a process of its own: importing locust monkey-patches the process it runs in.
"""

from __future__ import annotations

import subprocess
import sys

POOL = """
from locust.env import Environment
from scotbed.workloads.grpc_user import ClientPool

pool = ClientPool(Environment())
first = pool.get("127.0.0.1:1")
assert pool.get("127.0.0.1:1") is first and pool.get("127.0.0.1:2") is not first
fresh = pool.renew(first)
assert fresh is not first and pool.get("127.0.0.1:1") is fresh
assert pool.renew(first) is fresh  # a second user of the lost session gets the same fresh one
pool.close()
for c in (first, fresh):  # every channel the pool made is closed, the replaced one too
    try:
        c.channel.unary_unary("/x")(b"", timeout=1)
    except ValueError:
        continue
    raise AssertionError("a closed channel took a call")
"""

WAITS = """
from grpc import _common
from scotbed.workloads.grpc_user import GEVENT_WAIT_S, init_gevent

assert _common.MAXIMUM_WAIT_TIMEOUT == 0.1
init_gevent()
assert _common.MAXIMUM_WAIT_TIMEOUT == GEVENT_WAIT_S
"""


def _run(code: str) -> None:
    subprocess.run(
        [sys.executable, "-c", "from gevent import monkey; monkey.patch_all()\n" + code], check=True
    )


def test_one_client_per_broker_renewed_once_whoever_asks() -> None:
    _run(POOL)


def test_init_gevent_stops_the_blocked_calls_polling() -> None:
    _run(WAITS)
