"""A local process plan: every broker a child process on 127.0.0.1.

Ports are picked free at run time by :func:`free_ports`, the only I/O here:
it binds port 0 once per broker, holding all sockets open until every port
is known so no port is handed out twice. Another process may still grab a
port between the pick and the broker's bind; the broker then fails fast and
the run reports it.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from scotbed import topology as topo
from scotbed.config import BrokerConfig
from scotbed.orchestrator.plan import broker_configs
from scotbed.orchestrator.spec import Spec

HOST = "127.0.0.1"


@dataclass(frozen=True)
class LocalBroker:
    id: str
    listen: str  # 127.0.0.1:port
    log_path: str  # the broker's JSONL event log
    argv: tuple[str, ...]  # the command that starts it


def free_ports(n: int, host: str = HOST) -> list[int]:
    """``n`` distinct ports that were free on ``host`` a moment ago."""
    with ExitStack() as stack:
        ports = []
        for _ in range(n):
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind((host, 0))
            ports.append(s.getsockname()[1])
        return ports


def local_plan(
    scot: topo.Scot,
    ports: Mapping[str, int],
    config_file: str | Path,
    events_dir: str | Path,
    python: str = sys.executable,
) -> list[LocalBroker]:
    """One :class:`LocalBroker` per broker, in broker order."""
    return [
        LocalBroker(
            id=b.id,
            listen=f"{HOST}:{ports[b.id]}",
            log_path=str(Path(events_dir) / f"{b.id}.jsonl"),
            argv=(python, "-m", "scotbed.broker", "--config", str(config_file), "--id", b.id),
        )
        for b in scot.brokers
    ]


def local_broker_configs(
    spec: Spec, plan: list[LocalBroker], scot: topo.Scot, run_id: str
) -> list[BrokerConfig]:
    """The configs that go into ``config_file`` for ``plan``."""
    addresses = {p.id: p.listen for p in plan}
    logs = {p.id: p.log_path for p in plan}
    return broker_configs(spec, scot, addresses, log_paths=logs, run_id=run_id)
