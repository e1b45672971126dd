"""Service registration that refuses undecodable requests cleanly.

The generated ``add_*Servicer_to_server`` functions decode requests with
``Message.FromString``; bytes that are not a valid message make gRPC log a
traceback and answer ``UNKNOWN``. Here every method of a service is
registered from its descriptor with a decoder that never raises: a request
that does not decode is refused with ``INVALID_ARGUMENT`` naming the
message type, counted through ``on_malformed``, and nothing is logged.
"""

from __future__ import annotations

import inspect
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


def _wrap(fn: Any, check: Callable[[Any, Any], Any]) -> Any:
    """``fn`` with ``check(request, context)`` first, keeping its kind (coroutine or async generator)."""
    if inspect.isasyncgenfunction(fn):

        async def gen(request: Any, context: Any) -> AsyncIterator[Any]:
            async for reply in fn(await check(request, context), context):
                yield reply

        return gen

    async def coro(request: Any, context: Any) -> Any:
        return await fn(await check(request, context), context)

    return coro


def _handler(fn: Any, method: MethodDescriptor, on_malformed: Callable[[], None]) -> grpc.RpcMethodHandler:
    req_cls, resp_cls = GetMessageClass(method.input_type), GetMessageClass(method.output_type)
    kw = {"request_deserializer": _decoder(req_cls), "response_serializer": resp_cls.SerializeToString}

    async def refuse(request: Any, context: Any) -> Any:
        if isinstance(request, Malformed):
            on_malformed()
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.text)
        return request

    async def checked(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        async for request in requests:
            yield await refuse(request, context)

    async def checked_stream(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        return checked(requests, context)

    if method.client_streaming and method.server_streaming:
        return grpc.stream_stream_rpc_method_handler(_wrap(fn, checked_stream), **kw)
    if method.client_streaming:
        return grpc.stream_unary_rpc_method_handler(_wrap(fn, checked_stream), **kw)
    if method.server_streaming:
        return grpc.unary_stream_rpc_method_handler(_wrap(fn, refuse), **kw)
    return grpc.unary_unary_rpc_method_handler(_wrap(fn, refuse), **kw)


def _implemented(servicer: Any, name: str) -> bool:
    """False for a method the servicer inherits from a generated base (it only raises)."""
    fn = getattr(type(servicer), name, None)
    return fn is not None and not getattr(fn, "__module__", "").endswith("_pb2_grpc")


def add_service(
    server: grpc.aio.Server, servicer: Any, service: ServiceDescriptor, on_malformed: Callable[[], None]
) -> None:
    """Register ``servicer``'s methods of ``service``; one it does not implement answers UNIMPLEMENTED."""
    handlers = {
        m.name: _handler(getattr(servicer, m.name), m, on_malformed)
        for m in service.methods
        if _implemented(servicer, m.name)
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
