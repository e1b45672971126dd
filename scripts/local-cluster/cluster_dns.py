"""The local cluster's DNS: A records for Services and Pods, read from the API (CoreDNS is not packaged).

Answers, for every Endpoints object ``S`` in namespace ``N`` (ready and not-ready addresses):
``H.S.N.svc.<domain>`` -> the address of the pod whose ``hostname`` is ``H`` (pods with
``subdomain: S``), and ``S.N.svc.<domain>`` -> every address of the Service. Names may also end at
``.svc``. There is no kube-proxy in this cluster, so a ClusterIP Service's name resolves to its
pods' addresses too (as if headless): clients must dial the target port (scotbed's objects use
the same number for port and targetPort). A name under a known Service that has no address yet
is held for up to ``HOLD_S`` while the endpoints appear (a pod that starts before its peer would
otherwise fail its first lookup); any other name is NXDOMAIN at once. Nothing is forwarded: all
traffic stays on this machine.

``cluster_dns.py --kubeconfig FILE --listen IP:PORT``: serve (UDP). ``--probe IP:PORT``: exit 0
when a server answers there.
"""

from __future__ import annotations

import argparse
import logging
import socket
import socketserver
import struct
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

TYPE_A = 1
CLASS_IN = 1
RCODE_NXDOMAIN = 3
RCODE_FORMERR = 1
TTL_S = 5
HOLD_S = 5.0
POLL_S = 1.0

log = logging.getLogger("cluster-dns")


@dataclass(frozen=True)
class Query:
    ident: int
    flags: int
    name: str  # lowercase, no trailing dot
    qtype: int
    question: bytes  # the question section as received, echoed in the answer


def parse_query(data: bytes) -> Query | None:
    """The single question of a DNS query, or None when the packet is not one."""
    if len(data) < 12:
        return None
    ident, flags, qdcount = struct.unpack("!HHH", data[:6])
    if flags & 0x8000 or qdcount != 1:
        return None
    labels, pos = [], 12
    while True:
        if pos >= len(data):
            return None
        n = data[pos]
        pos += 1
        if n == 0:
            break
        if n & 0xC0 or pos + n > len(data):
            return None
        labels.append(data[pos : pos + n].decode("ascii", "replace").lower())
        pos += n
    if pos + 4 > len(data):
        return None
    qtype = struct.unpack("!H", data[pos : pos + 2])[0]
    return Query(ident, flags, ".".join(labels), qtype, data[12 : pos + 4])


def build_response(query: Query, addresses: Iterable[str], rcode: int = 0) -> bytes:
    """An authoritative answer to ``query`` with one A record per address."""
    answers = [
        struct.pack("!HHHIH", 0xC00C, TYPE_A, CLASS_IN, TTL_S, 4) + socket.inet_aton(ip) for ip in addresses
    ]
    flags = 0x8000 | (query.flags & 0x7900) | 0x0400 | rcode  # QR, opcode + RD echoed, AA
    header = struct.pack("!HHHHHH", query.ident, flags, 1, len(answers), 0, 0)
    return header + query.question + b"".join(answers)


@dataclass
class Records:
    """Name -> addresses, plus the names that exist but may still be waiting for addresses."""

    addresses: dict[str, list[str]] = field(default_factory=dict)
    services: set[str] = field(default_factory=set)  # "S.N.svc.<domain>"

    def lookup(self, name: str, domain: str) -> tuple[list[str] | None, bool]:
        """(addresses or None for no such name, whether the name may appear soon)."""
        full = name + "." + domain if name.endswith(".svc") else name
        if full in self.addresses:
            return self.addresses[full], False
        parts = full.split(".")
        service = ".".join(parts[1:]) if len(parts) > 1 else ""
        pending = full in self.services or service in self.services
        return None, pending


def records_from(endpoints: Iterable[Any], services: Iterable[Any], domain: str) -> Records:
    """Records from the API's Endpoints and Service objects (kubernetes client models)."""
    out = Records()
    for svc in services:
        out.services.add(f"{svc.metadata.name}.{svc.metadata.namespace}.svc.{domain}")
    for ep in endpoints:
        base = f"{ep.metadata.name}.{ep.metadata.namespace}.svc.{domain}"
        ready: list[str] = []
        not_ready: list[str] = []
        for subset in ep.subsets or []:
            for addrs, into in ((subset.addresses, ready), (subset.not_ready_addresses, not_ready)):
                for a in addrs or []:
                    into.append(a.ip)
                    if a.hostname:
                        out.addresses[f"{a.hostname}.{base}"] = [a.ip]
        ips = ready or not_ready
        if ips:
            out.addresses[base] = sorted(set(ips))
    return out


class Resolver:
    """Keeps :class:`Records` fresh from the API and answers queries from them."""

    def __init__(self, core: Any, domain: str) -> None:
        self.core = core
        self.domain = domain
        self.records = Records()
        self.changed = threading.Condition()

    def refresh(self) -> None:
        eps = self.core.list_endpoints_for_all_namespaces().items
        svcs = self.core.list_service_for_all_namespaces().items
        records = records_from(eps, svcs, self.domain)
        with self.changed:
            self.records = records
            self.changed.notify_all()

    def loop(self) -> None:
        while True:
            try:
                self.refresh()
            except Exception as e:  # the API server restarting is no reason to stop answering
                log.warning("refreshing records: %s", e)
            time.sleep(POLL_S)

    def answer(self, data: bytes) -> bytes | None:
        q = parse_query(data)
        if q is None:
            return None
        deadline = time.monotonic() + HOLD_S
        with self.changed:
            while True:
                ips, pending = self.records.lookup(q.name, self.domain)
                left = deadline - time.monotonic()
                if ips is not None or not pending or left <= 0:
                    break
                self.changed.wait(left)
        if ips is None:
            return build_response(q, [], 0 if pending else RCODE_NXDOMAIN)
        return build_response(q, ips if q.qtype == TYPE_A else [])


def serve(kubeconfig: str, listen: str, domain: str) -> None:
    from kubernetes import client, config

    core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    resolver = Resolver(core, domain)
    threading.Thread(target=resolver.loop, daemon=True).start()

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            data, sock = self.request
            reply = resolver.answer(data)
            if reply is not None:
                sock.sendto(reply, self.client_address)

    host, _, port = listen.rpartition(":")
    socketserver.ThreadingUDPServer.daemon_threads = True
    with socketserver.ThreadingUDPServer((host, int(port)), Handler) as server:
        log.info("answering for *.svc.%s on %s", domain, listen)
        server.serve_forever()


def probe(address: str) -> int:
    """0 when a DNS server at ``address`` answers a query (any rcode)."""
    host, _, port = address.rpartition(":")
    question = b"\x05probe\x07invalid\x00" + struct.pack("!HH", TYPE_A, CLASS_IN)
    q = struct.pack("!HHHHHH", 0x5CB7, 0x0100, 1, 0, 0, 0) + question
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        try:
            s.sendto(q, (host, int(port)))
            data = s.recv(512)
        except OSError:
            return 1
    return 0 if data[:2] == q[:2] else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kubeconfig")
    ap.add_argument("--listen", help="IP:PORT to serve on")
    ap.add_argument("--domain", default="cluster.local")
    ap.add_argument("--probe", metavar="IP:PORT", help="check that a server answers, then exit")
    args = ap.parse_args()
    if args.probe:
        return probe(args.probe)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    serve(args.kubeconfig, args.listen, args.domain)
    return 0


if __name__ == "__main__":
    sys.exit(main())
