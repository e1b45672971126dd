"""TLS: the run's certificates (one CA, one per broker, one for clients), real broker processes linked over
mutual TLS that refuse a plaintext client and a client of another CA, and (slow, Spark) a whole local
`scotbed run` with ``security.tls`` delivering exactly once (on compose: ``test_compose_backend``,
on Kubernetes: ``test_k8s_e2e``)."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography import x509
from grpc_health.v1 import health_pb2, health_pb2_grpc

from scotbed import topology
from scotbed.broker import tls
from scotbed.broker.client import BrokerClient
from scotbed.broker.launcher import LocalCluster
from scotbed.config import BrokerConfig, NeighbourConfig
from scotbed.experiment.spec import SpecError, build_scot, parse_spec
from scotbed.filters import Filter
from scotbed.orchestrator import pki, security
from scotbed.orchestrator.backends import compose
from scotbed.orchestrator.backends.base import DeployRequest
from scotbed.orchestrator.backends.docker_engine import IMAGE_UID
from scotbed.orchestrator.plan import deployed_configs
from scotbed.orchestrator.run import RunOptions, run_spec
from scotbed.orchestrator.state import RunState

QUICKSTART = Path(__file__).resolve().parents[1] / "experiments" / "quickstart.yaml"
TREE = {"kind": "tree", "acyclic": {"kind": "kary", "fanout": 2, "depth": 2}, "connectivity": 1}


def _sans(cert: x509.Certificate) -> set[str]:
    ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(n.value) for n in ext}


def test_issue_writes_one_ca_one_cert_per_broker_and_a_client_cert_all_signed_by_it(tmp_path: Path) -> None:
    d = tmp_path / "tls"
    pki.issue(d, {"b-a-0": ["b-a-0.brokers.ns.svc", "10.0.0.7"], "b-b-0": ["127.0.0.1"]}, "r1")
    assert sorted(p.name for p in d.iterdir()) == [
        "b-a-0.key", "b-a-0.pem", "b-b-0.key", "b-b-0.pem", "ca.pem", "client.key", "client.pem",
    ]  # fmt: skip
    ca = x509.load_pem_x509_certificate((d / "ca.pem").read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    certs = {
        n: x509.load_pem_x509_certificate((d / f"{n}.pem").read_bytes()) for n in ("b-a-0", "b-b-0", "client")
    }
    for cert in certs.values():
        cert.verify_directly_issued_by(ca)
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert _sans(certs["b-a-0"]) == {"b-a-0", "b-a-0.brokers.ns.svc", "10.0.0.7"}
    assert _sans(certs["b-b-0"]) == {"b-b-0", "127.0.0.1"}
    assert _sans(certs["client"]) == {"client", "localhost", "127.0.0.1", "::1"}
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in d.glob("*.key"))
    assert stat.S_IMODE(d.stat().st_mode) == 0o700


def test_hosts_name_the_listen_host_and_every_host_a_neighbour_dials() -> None:
    def nb(bid: str, address: str) -> NeighbourConfig:
        return NeighbourConfig(bid, "aCOL", "edge", 0, "v0", address)

    configs = [
        BrokerConfig("b-a-0", "v0", 0, "edge", "0.0.0.0:50051", (nb("b-b-0", "b-b-0.brokers.ns.svc:50051"),)),
        BrokerConfig("b-b-0", "v1", 0, "edge", "10.1.2.3:50051", (nb("b-a-0", "b-a-0:50051"),)),
    ]
    assert security.hosts(configs) == {"b-a-0": ["b-a-0"], "b-b-0": ["10.1.2.3", "b-b-0.brokers.ns.svc"]}


def test_tls_runs_on_every_backend_and_is_off_by_default() -> None:
    path2 = {"kind": "tree", "connectivity": 1, "acyclic": {"kind": "path", "n": 2}}
    base = {"name": "x", "routing": "rpf", "topology": path2}
    assert parse_spec(base).security.tls is False
    spec = parse_spec({**base, "security": {"tls": True}})
    security.validate(spec)
    with pytest.raises(SpecError):
        parse_spec({**base, "security": {"tls": "yes"}})
    peers = parse_spec(
        {"name": "v", "topology": {"kind": "peers", "n": 6}, "routing": "vinifera", "security": {"tls": True}}
    )
    with pytest.raises(SpecError, match="peer-process overlays"):
        security.validate(peers)


def test_compose_mounts_the_run_certificates_into_every_broker_and_names_them_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = parse_spec({"name": "x", "routing": "rpf", "topology": TREE, "security": {"tls": True}})
    scot = build_scot(spec)
    configs = deployed_configs(spec, scot, compose.ComposeBackend().addressing("r1"), "r1")
    request = DeployRequest("r1", tmp_path, configs, 30.0, RunState("r1", "compose", str(tmp_path)))
    plain = compose.render_run(request, user="1000:1000")
    assert all(tls.ENV_DIR not in svc["environment"] for svc in plain["services"].values())
    directory = security.enable(
        parse_spec({**spec.model_dump(), "security": {"tls": True}}), tmp_path, configs, "r1"
    )
    try:
        assert directory == tmp_path / "tls"
        doc = compose.render_run(request, user="1000:1000")
    finally:
        security.disable()
    assert tls.ENV_DIR not in os.environ
    for bid, svc in doc["services"].items():
        assert svc["environment"][tls.ENV_DIR] == tls.CONTAINER_DIR
        assert svc["volumes"][-1] == f"{directory}:{tls.CONTAINER_DIR}:ro"
        cert = x509.load_pem_x509_certificate((directory / f"{bid}.pem").read_bytes())
        assert {bid, "127.0.0.1"} <= _sans(cert)  # dialled by service name inside, by 127.0.0.1 from the host
    compose.hand_to_image_user(directory)  # the brokers run as the image's user; the keys are 0600
    owner = IMAGE_UID if os.getuid() == 0 else os.getuid()
    assert {p.stat().st_uid for p in (directory, *directory.iterdir())} == {owner}


async def health_status(address: str, creds: grpc.ChannelCredentials | None) -> str:
    """The broker's gRPC health status over plaintext (``creds`` None) or TLS, or the refusal's code."""
    channel = grpc.aio.insecure_channel(address) if creds is None else grpc.aio.secure_channel(address, creds)
    async with channel:
        try:
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=3
            )
        except grpc.aio.AioRpcError as e:
            return e.code().name
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


PRICES = [5, 15, 25, 55, 70]


def _links_up(cluster: LocalCluster, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not all(link.connected for s in cluster.status_all().values() for link in s.links):
        assert time.monotonic() < deadline, "links not up over TLS"
        time.sleep(0.05)


def test_brokers_link_over_mutual_tls_deliver_once_and_refuse_plaintext_and_foreign_clients(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scot = topology.tree(topology.path(3))
    ids = [b.id for b in scot.brokers]
    pki.issue(tmp_path / "tls", {b: pki.LOCAL_HOSTS for b in ids})
    pki.issue(tmp_path / "other", {})  # a client certificate from another CA
    monkeypatch.setenv(tls.ENV_DIR, str(tmp_path / "tls"))
    with LocalCluster.from_topology(scot, tmp_path / "run", routing="rpf", matching="counting") as c:
        _links_up(c)
        first, last = c.address(ids[0]), c.address(ids[-1])

        async def scenario() -> tuple[list[str], dict[str, str]]:
            async with BrokerClient(first) as sub, BrokerClient(last) as pub:
                stream = await sub.subscribe("s1", "price > 20")
                await asyncio.to_thread(c.wait_quiescent)
                await pub.publish([(f"p{p}", {"price": p}) for p in PRICES])
                await asyncio.to_thread(c.wait_quiescent)
                await asyncio.sleep(0.3)
                got = list(stream.pub_ids())
                await stream.close()
            refusals = {
                "tls": await health_status(last, tls.client_credentials(tmp_path / "tls")),
                "plaintext": await health_status(last, None),
                "foreign": await health_status(last, tls.client_credentials(tmp_path / "other")),
            }
            return got, refusals

        got, refusals = asyncio.run(scenario())
    flt = Filter.parse("price > 20")
    assert sorted(got) == sorted(f"p{p}" for p in PRICES if flt.matches({"price": p}))
    assert refusals == {"tls": "SERVING", "plaintext": "UNAVAILABLE", "foreign": "UNAVAILABLE"}


RUN_SETS = [
    "security.tls=true",
    "routing=rpf",
    "topology.kind=tree",
    "topology.acyclic={kind: kary, fanout: 2, depth: 2}",
    "topology.connectivity=1",
    "workload.subscribers=12",
    "workload.publishers=2",
    "workload.notifications_per_publisher=40",
    "workload.rate_per_minute=2400",
    "workload.selectivity=0.1",
    "timeouts.ready_s=180",
]


def _run_with_tls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    options = RunOptions(backend="local", out=tmp_path / "runs", quiet=True)
    result = run_spec(QUICKSTART, RUN_SETS, options)
    n = result.summary["notifications"]
    assert result.ok, result.verdict
    assert n["delivered"] == n["expected_deliveries"] > 0
    assert n["missing"] == n["duplicates"] == n["false_positives"] == 0
    scot = build_scot(parse_spec({"name": "x", "routing": "rpf", "topology": TREE}))
    brokers = [b.id for b in scot.brokers]
    pems = sorted(p.stem for p in (result.run_dir / "tls").glob("*.pem"))
    assert pems == sorted([*brokers, "ca", "client"])
    assert tls.ENV_DIR not in os.environ  # the run switched itself back to plaintext


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(900)
def test_a_local_run_with_tls_delivers_exactly_once(
    tmp_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run_with_tls(tmp_path, monkeypatch)
