"""The local cluster's own parts that need no cluster: its DNS answers, its kubeconfig merge and the list
of Debian packages it installs."""

from __future__ import annotations

import importlib.util
import shutil
import socket
import struct
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from kubernetes import client as k

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts" / "local-cluster"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


dns = load("cluster_dns")
kubeconfig = load("kubeconfig")


def query(name: str, qtype: int = 1, ident: int = 0x1234) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 1) + labels + struct.pack("!HH", qtype, 1)


def answers(reply: bytes) -> tuple[int, list[str]]:
    """(rcode, A addresses) of a reply to a query built by :func:`query`."""
    _, flags, qd, an = struct.unpack("!HHHH", reply[:8])
    assert flags & 0x8000 and qd == 1
    pos = 12
    while reply[pos]:
        pos += reply[pos] + 1
    pos += 5
    ips = []
    for _ in range(an):
        ptr, rtype, _cls, _ttl, rdlen = struct.unpack("!HHHIH", reply[pos : pos + 12])
        assert ptr == 0xC00C and rtype == 1 and rdlen == 4
        ips.append(socket.inet_ntoa(reply[pos + 12 : pos + 16]))
        pos += 16
    return flags & 0xF, ips


Addrs = list[tuple[str, str | None]]


def endpoints(name: str, ns: str, ready: Addrs, not_ready: Addrs) -> k.V1Endpoints:
    def addrs(items: Addrs) -> list[k.V1EndpointAddress]:
        return [k.V1EndpointAddress(ip=ip, hostname=h) for ip, h in items]

    subset = k.V1EndpointSubset(addresses=addrs(ready) or None, not_ready_addresses=addrs(not_ready) or None)
    return k.V1Endpoints(metadata=k.V1ObjectMeta(name=name, namespace=ns), subsets=[subset])


def service(name: str, ns: str) -> k.V1Service:
    return k.V1Service(metadata=k.V1ObjectMeta(name=name, namespace=ns))


def resolver() -> Any:
    eps = [
        endpoints("brokers", "run1", [("172.17.0.5", "b-a-0")], [("172.17.0.6", "b-a-1")]),
        endpoints("locust-master", "run1", [], [("172.17.0.9", None)]),
    ]
    r = dns.Resolver(core=None, domain="cluster.local")
    r.records = dns.records_from(eps, [service("brokers", "run1"), service("late", "run1")], "cluster.local")
    return r


def test_pods_resolve_by_hostname_and_subdomain_ready_or_not() -> None:
    r = resolver()
    assert answers(r.answer(query("b-a-0.brokers.run1.svc.cluster.local"))) == (0, ["172.17.0.5"])
    assert answers(r.answer(query("b-a-1.brokers.run1.svc"))) == (0, ["172.17.0.6"])  # not ready yet
    assert answers(r.answer(query("B-A-0.Brokers.run1.svc.cluster.local"))) == (0, ["172.17.0.5"])


def test_services_resolve_to_their_pods_without_a_proxy() -> None:
    r = resolver()
    assert answers(r.answer(query("brokers.run1.svc.cluster.local"))) == (0, ["172.17.0.5"])
    assert answers(r.answer(query("locust-master.run1.svc.cluster.local"))) == (0, ["172.17.0.9"])


def test_unknown_names_are_nxdomain_and_other_types_empty() -> None:
    r = resolver()
    assert answers(r.answer(query("example.com"))) == (3, [])
    assert answers(r.answer(query("b-a-9.nosuch.run1.svc.cluster.local"))) == (3, [])
    assert answers(r.answer(query("b-a-0.brokers.run1.svc.cluster.local", qtype=28))) == (0, [])  # AAAA


def test_a_name_under_a_known_service_waits_for_its_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dns, "HOLD_S", 0.2)
    r = resolver()
    assert answers(r.answer(query("late.run1.svc.cluster.local"))) == (0, [])  # held, then empty


def test_reply_echoes_the_id_and_garbage_gets_no_reply() -> None:
    reply = resolver().answer(query("brokers.run1.svc.cluster.local", ident=0xBEEF))
    assert reply[:2] == b"\xbe\xef"
    assert resolver().answer(b"\x00\x01") is None


def test_kubeconfig_merge_and_remove_keep_other_entries(tmp_path: Path) -> None:
    mine = tmp_path / "admin.kubeconfig"
    mine.write_text(yaml.safe_dump({
        "clusters": [{"name": "scotbed-local", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "scotbed-local-admin", "user": {"token": "t"}}],
        "contexts": [{"name": "scotbed-local",
                      "context": {"cluster": "scotbed-local", "user": "scotbed-local-admin"}}],
    }))  # fmt: skip
    user = tmp_path / "config"
    other = {"name": "kind-x", "context": {"cluster": "kind-x", "user": "kind-x"}}
    user.write_text(yaml.safe_dump({"contexts": [other], "current-context": "kind-x"}))
    for _ in range(2):  # idempotent
        kubeconfig.merge(user, mine, "scotbed-local")
    doc = yaml.safe_load(user.read_text())
    assert doc["current-context"] == "scotbed-local"
    assert [c["name"] for c in doc["contexts"]] == ["kind-x", "scotbed-local"]
    kubeconfig.remove(user, "scotbed-local")
    doc = yaml.safe_load(user.read_text())
    assert doc["contexts"] == [other] and doc["clusters"] == [] and doc["current-context"] == ""


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a Debian system")
def test_packages_names_each_missing_package_once_and_no_installed_one() -> None:
    """packages.sh is the one list `make local-cluster` and .ci/run install from; ``missing`` is what
    ``install`` hands to apt-get."""
    script = str(SCRIPTS / "packages.sh")
    listed = subprocess.run([script, "list"], capture_output=True, text=True, check=True).stdout.split()
    assert {"golang-go", "etcd-server", "socat", "docker.io", "debootstrap", "python3-venv"} <= set(listed)
    absent = "scotbed-no-such-package"
    missing = subprocess.run(
        [script, "missing", absent, "dpkg", absent], capture_output=True, text=True, check=True
    ).stdout.split()
    assert missing.count(absent) == 1 and "dpkg" not in missing
    assert set(missing) - {absent} <= set(listed)
