"""``python -m scotbed.broker.health HOST:PORT``: exit 0 when the broker reports SERVING.

Used by compose healthchecks and launchers; exit 1 (with the reason on
stderr) when the broker is unreachable or not serving within ``--timeout``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from scotbed.broker import tls

SERVING = health_pb2.HealthCheckResponse.SERVING


async def check(address: str, timeout_s: float = 2.0, service: str = "") -> tuple[bool, str]:
    """(serving?, status name or error) of one broker."""
    try:
        async with tls.aio_channel(address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout_s)
    except grpc.aio.AioRpcError as e:
        return False, f"{e.code().name}: {e.details()}"
    name = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    return reply.status == SERVING, name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scotbed.broker.health", description=__doc__.splitlines()[0])
    ap.add_argument("address", help="HOST:PORT of the broker's gRPC server")
    ap.add_argument("--timeout", type=float, default=2.0, help="seconds")
    ap.add_argument("--service", default="", help="service name ('' = the whole server)")
    args = ap.parse_args(argv)
    ok, text = asyncio.run(check(args.address, args.timeout, args.service))
    if not ok:
        print(f"{args.address}: {text}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
