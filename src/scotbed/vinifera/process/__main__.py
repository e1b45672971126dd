"""``python -m scotbed.vinifera.process --run-file FILE --name N``: run one peer until SIGTERM/SIGINT.

The run file (written by :class:`scotbed.vinifera.process.cluster.PeerCluster`) holds the run id, the peer
algorithm, the :class:`~scotbed.vinifera.config.PeerConfig`, the per-round event capacity (absent:
none), and per peer its name, ring id,
subscription, address (``bind`` when it listens elsewhere, e.g. 0.0.0.0 in a container) and event
log. Prints ``READY <name> <host:port>`` once serving.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
from pathlib import Path
from typing import Any

import grpc

from scotbed import contract
from scotbed.broker.eventlog import EventLog
from scotbed.routing import peer_class
from scotbed.v1 import scotbed_pb2_grpc as pbg
from scotbed.vinifera import codec
from scotbed.vinifera.peer import peer_rng
from scotbed.vinifera.process.node import PeerNode


async def serve(run: dict[str, Any], name: int) -> None:
    me = next(p for p in run["peers"] if p["name"] == name)
    cfg = codec.config_in(run["config"])
    sub = codec.sub_in(me["sub"])
    peer = peer_class(run["routing"])(name, int(me["id"]), sub, cfg, peer_rng(run["seed"], name))
    events = EventLog(contract.peer_node(name), me["log"])
    if sub is not None:
        events.emit(contract.SUBSCRIBE, ranges=codec.sub_out(sub))
    addresses = {int(p["name"]): p["address"] for p in run["peers"]}
    node = PeerNode(peer, run["run"], addresses, events, run.get("capacity"))
    server = grpc.aio.server()
    pbg.add_PeerServicer_to_server(node, server)
    port = server.add_insecure_port(me.get("bind", me["address"]))
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    timer = asyncio.create_task(node.round_timer(run["period_ms"])) if run.get("period_ms") else None
    print(f"READY {name} {me['address'].rpartition(':')[0]}:{port}", flush=True)
    try:
        await stop.wait()
    finally:
        if timer is not None:
            timer.cancel()
        await server.stop(grace=0.2)
        await node.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scotbed.vinifera.process", description=__doc__)
    ap.add_argument("--run-file", required=True, type=Path)
    ap.add_argument("--name", required=True, type=int)
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve(json.loads(a.run_file.read_text()), a.name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
