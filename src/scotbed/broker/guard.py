"""Service registration that refuses undecodable requests cleanly.

The generated ``add_*Servicer_to_server`` functions decode requests with
``Message.FromString``; bytes that are not a valid message make gRPC log a
traceback and answer ``UNKNOWN``. Here every method of a service is
registered from its descriptor with a decoder that never raises: a request
that does not decode is refused with ``INVALID_ARGUMENT`` naming the
message type, counted through ``on_malformed``, and nothing is logged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from google.protobuf import message as pbmessage
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message_factory import GetMessageClass


class Malformed:
    """Stands for a request that did not decode."""

    def __init__(self, type_name: str, error: str) -> None:
        self.text = f"the request is not a valid {type_name}: {error}"


def _decoder(cls: Any) -> Callable[[bytes], Any]:
    def decode(data: bytes) -> Any:
        try:
            return cls.FromString(data)
        except (pbmessage.DecodeError, ValueError, RuntimeError) as e:
            return Malformed(cls.DESCRIPTOR.full_name, str(e) or type(e).__name__)

    return decode


def _handler(fn: Any, method: MethodDescriptor, on_malformed: Callable[[], None]) -> grpc.RpcMethodHandler:
    req_cls, resp_cls = GetMessageClass(method.input_type), GetMessageClass(method.output_type)
    kw = {"request_deserializer": _decoder(req_cls), "response_serializer": resp_cls.SerializeToString}

    async def refuse(request: Any, context: Any) -> None:
        if isinstance(request, Malformed):
            on_malformed()
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.text)

    async def checked(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        async for request in requests:
            await refuse(request, context)
            yield request

    if method.client_streaming:

        async def stream_in(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            async for reply in fn(checked(requests, context), context):
                yield reply

        if method.server_streaming:
            return grpc.stream_stream_rpc_method_handler(stream_in, **kw)
        raise NotImplementedError(f"{method.full_name}: client-streaming unary replies are not used")
    if method.server_streaming:

        async def stream_out(request: Any, context: Any) -> AsyncIterator[Any]:
            await refuse(request, context)
            async for reply in fn(request, context):
                yield reply

        return grpc.unary_stream_rpc_method_handler(stream_out, **kw)

    async def unary(request: Any, context: Any) -> Any:
        await refuse(request, context)
        return await fn(request, context)

    return grpc.unary_unary_rpc_method_handler(unary, **kw)


def add_service(
    server: grpc.aio.Server, servicer: Any, service: ServiceDescriptor, on_malformed: Callable[[], None]
) -> None:
    """Register ``servicer`` (an object with one coroutine per method of ``service``)."""
    handlers = {m.name: _handler(getattr(servicer, m.name), m, on_malformed) for m in service.methods}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
