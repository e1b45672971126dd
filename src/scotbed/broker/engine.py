"""gRPC's I/O engine for a broker process: its poller (iomgr), not its EventEngine threads.

Importing this module sets ``GRPC_EXPERIMENTS`` (unless the environment already does), so a process
must import it before anything imports gRPC, which reads the variable once, when it loads. The
broker's entry point and the benchmarks' relay import it first.

Why. Under gRPC's EventEngine a received message passes through an event-engine poller thread, an
event-engine worker and grpc.aio's poller thread before the broker's event loop runs: each hand-off
is a thread wake-up, which on a shared host waits for a core. With the poller, grpc.aio's own
thread polls the sockets: less CPU and a shorter link per message at low rates, the same in a flood
(benchmarks/README.md has the figures).
"""

from __future__ import annotations

import os

ENV = "GRPC_EXPERIMENTS"
WITHOUT_EVENT_ENGINE = ",".join(
    f"-{name}"
    for name in (
        "event_engine_client",
        "event_engine_listener",
        "event_engine_for_all_other_endpoints",
        "event_engine_callback_cq",
    )
)

os.environ.setdefault(ENV, WITHOUT_EVENT_ENGINE)
