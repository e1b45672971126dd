"""A run's certificates: one CA, one certificate per broker, one for the run's clients.

Fresh for every run (``<run dir>/tls/``), so nothing outlives it: the CA's key
is never written, so no further certificate can be signed for the run once
:func:`issue` returns. Keys are EC P-256, files mode 0600. Each broker's
certificate names its id and every host it is dialled by (DNS names and IP
addresses as subjectAltName: gRPC checks the dialled host against them);
every certificate is good for both ends (serverAuth and clientAuth), since a
broker is a server to its clients and a client on its links.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from scotbed.broker.tls import CA, CLIENT, cert_path, key_path

VALID_DAYS = 7  # longer than any run; a leaked directory is useless a week later
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


def _san(hosts: Iterable[str]) -> Any:
    from cryptography import x509

    names: list[x509.GeneralName] = []
    for h in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            names.append(x509.DNSName(h))
    return x509.SubjectAlternativeName(names)


def _write(directory: Path, name: str, key: Any, cert: Any) -> None:
    from cryptography.hazmat.primitives import serialization

    kp = key_path(directory, name)
    kp.touch(mode=0o600)
    kp.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    cert_path(directory, name).write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def issue(directory: Path, hosts: Mapping[str, Iterable[str]], run_id: str = "") -> None:
    """Write ``ca.pem``, ``<name>.pem``/``<name>.key`` for every broker in ``hosts`` (id -> hosts it is
    dialled by) and for the run's clients into ``directory``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=VALID_DAYS)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name(f"scotbed run CA {run_id}".strip())
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    cert_path(directory, CA).write_bytes(ca.public_bytes(_pem()))
    usage = x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH])
    for cn, names in {**{b: list(h) for b, h in hosts.items()}, CLIENT: list(LOCAL_HOSTS)}.items():
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(name(cn))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_san([cn, *names]), critical=False)
            .add_extension(usage, critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        _write(directory, cn, key, cert)


def _pem() -> Any:
    from cryptography.hazmat.primitives import serialization

    return serialization.Encoding.PEM
