"""A free TCP port on loopback, for a server this process starts next (a Locust master, a Spark
daemon). Another process may take it in between; the servers that matter fail loudly then."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
