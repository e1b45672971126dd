"""``python -m scotbed.broker --config FILE --id ID``: run one broker until SIGTERM/SIGINT.

Prints exactly one line ``READY <id> <host:port>`` on stdout once every
service answers (so a launcher learns the bound port when ``listen`` has
port 0); diagnostics go to stderr. A configuration that cannot be used exits
with status 2 and a message naming the field. On SIGTERM the broker stops
accepting input, processes everything it has acknowledged, gives its output
queues ``--stop-grace`` seconds to drain over the links that are up, flushes its event log and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from scotbed.broker import engine  # noqa: F401  (first: it chooses gRPC's I/O engine before gRPC loads)
from scotbed.broker.links import new_incarnation
from scotbed.broker.readyfile import ReadyFile
from scotbed.broker.runtime import STOP_GRACE_S, STOP_INPUT_S, Broker
from scotbed.broker.server import NOT_SERVING, SERVICE_NAMES, SERVING, build_server
from scotbed.config import BrokerConfig, ConfigError, load

log = logging.getLogger("scotbed.broker")


async def serve(cfg: BrokerConfig, stop_grace_s: float = STOP_GRACE_S, ready_file: str | None = None) -> None:
    broker = Broker(cfg)
    server, health, port = build_server(broker)
    ready = ReadyFile(ready_file)
    ready.not_serving()  # a file left by an earlier start says nothing about this one
    for name in ("", *SERVICE_NAMES):
        await health.set(name, NOT_SERVING)
    await server.start()
    broker.start()
    broker.start_links(new_incarnation())
    if broker.topology is not None:
        broker.topology.start(f"{cfg.listen.rpartition(':')[0]}:{port}")
    extra: list[asyncio.Task[None]] = []
    if cfg.prometheus_port is not None:
        from scotbed.broker.metrics import PATH, Metrics

        metrics = Metrics(broker, cfg.prometheus_port, cfg.listen.rpartition(":")[0])
        log.info("%s: Prometheus metrics on http://%s%s", cfg.id, metrics.address, PATH)
        extra.append(asyncio.create_task(metrics.run()))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    for name in ("", *SERVICE_NAMES):
        await health.set(name, SERVING)
    host = cfg.listen.rpartition(":")[0]
    ready.serving(f"SERVING {cfg.id} {host}:{port}")
    print(f"READY {cfg.id} {host}:{port}", flush=True)
    try:
        await stop.wait()
        log.info("%s: stopping", cfg.id)
        broker.stopping = True
        ready.not_serving()
        await health.enter_graceful_shutdown()
        await server.stop(grace=0.2)
        if not await broker.wait_input_empty(timeout_s=STOP_INPUT_S):
            log.error("%s: input queue not empty after %g s; stopping anyway", cfg.id, STOP_INPUT_S)
        await broker.wait_drained(timeout_s=stop_grace_s)
    finally:
        ready.not_serving()
        await broker.stop_links()
        for t in extra:
            t.cancel()
        await asyncio.gather(*extra, return_exceptions=True)
        await broker.stop_tasks()
        broker.events.close()


def main(argv: list[str] | None = None) -> int:
    # a parent may start us with SIGINT/SIGTERM blocked (a mask survives exec); a broker must always
    # hear them, to flush its event log and stop gracefully
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    ap = argparse.ArgumentParser(prog="python -m scotbed.broker", description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="broker JSON config (one broker or all brokers)")
    ap.add_argument("--id", required=True, help="this broker's id (selects it from an all-brokers file)")
    ap.add_argument(
        "--stop-grace", type=float, default=STOP_GRACE_S, help="seconds to drain output queues on stop"
    )
    ap.add_argument("--log-level", default="INFO")
    ap.add_argument("--ready-file", help="a file kept while the health service says SERVING (exec probes)")
    args = ap.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    try:
        cfg = load(args.config, args.id)
        from scotbed.routing import algorithm_class

        algorithm_class(cfg.routing)
    except ConfigError as e:
        print(f"scotbed.broker: bad config: {e}", file=sys.stderr)
        return 2
    except (ValueError, ImportError) as e:
        print(f"scotbed.broker: bad config: routing: {e}", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(cfg, args.stop_grace, args.ready_file))
    except OSError as e:
        print(f"scotbed.broker: {cfg.id}: listen: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
