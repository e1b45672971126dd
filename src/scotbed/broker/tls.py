"""TLS for every gRPC channel and server of a run, switched on by one environment variable.

A run with ``security: {tls: true}`` writes its certificates into one
directory (:mod:`scotbed.orchestrator.pki`) and sets :data:`ENV_DIR` to it
for itself and every process it starts (brokers, Locust), so the brokers'
links, the orchestrator's health and Admin calls and the clients all go
through :func:`aio_channel` / :func:`channel` and the brokers through
:func:`add_port` without each caller carrying a path. Without it every
channel is plaintext, as before.

Mutual TLS: a broker's server asks for a client certificate signed by the
run's CA, so a plaintext client, or one with a certificate from elsewhere,
is refused during the handshake. Brokers present their own certificate on
their links; the orchestrator and the clients present the run's client one.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import grpc

ENV_DIR = "SCOTBED_TLS_DIR"
CONTAINER_DIR = "/run/scotbed-tls"  # where containers (compose, k8s) see the run's certificates
CA = "ca"
CLIENT = "client"


def cert_path(directory: Path, name: str) -> Path:
    return directory / f"{name}.pem"


def key_path(directory: Path, name: str) -> Path:
    return directory / f"{name}.key"


def directory() -> Path | None:
    """The run's certificate directory, or None for plaintext."""
    value = os.environ.get(ENV_DIR)
    return Path(value) if value else None


@functools.cache
def _read(path: Path) -> bytes:
    return path.read_bytes()


def _pair(d: Path, name: str) -> tuple[bytes, bytes]:
    return _read(key_path(d, name)), _read(cert_path(d, name))


def client_credentials(d: Path, name: str = CLIENT) -> grpc.ChannelCredentials:
    key, cert = _pair(d, name)
    return grpc.ssl_channel_credentials(
        root_certificates=_read(cert_path(d, CA)), private_key=key, certificate_chain=cert
    )


def aio_channel(address: str, options: Any = None, name: str = CLIENT) -> grpc.aio.Channel:
    """``grpc.aio`` channel to ``address``: TLS (presenting ``name``'s certificate) when the run has
    certificates, plaintext otherwise."""
    d = directory()
    if d is None:
        return grpc.aio.insecure_channel(address, options=options)
    return grpc.aio.secure_channel(address, client_credentials(d, name), options=options)


def channel(address: str, options: Any = None) -> grpc.Channel:
    """Blocking channel (Locust's users), as :func:`aio_channel`."""
    d = directory()
    if d is None:
        return grpc.insecure_channel(address, options=options)
    return grpc.secure_channel(address, client_credentials(d), options=options)


def add_port(server: grpc.aio.Server, listen: str, name: str) -> int:
    """Bind ``listen``: with TLS, serving ``name``'s certificate and requiring a client one of the run."""
    d = directory()
    if d is None:
        return server.add_insecure_port(listen)
    creds = grpc.ssl_server_credentials(
        [_pair(d, name)], root_certificates=_read(cert_path(d, CA)), require_client_auth=True
    )
    return server.add_secure_port(listen, creds)
