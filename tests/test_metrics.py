"""The brokers' Prometheus endpoint switched on from the spec (``metrics: {prometheus: true}``).

A real local run kept alive (``--keep``) is scraped at the addresses its ``topology.json`` names,
and every broker's series must equal the counters the broker reports over its admin Status RPC;
the launcher reserves a free loopback port per broker; with metrics off (the default) no broker
config has a port and no manifest an annotation or a metrics port.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from test_run_local import SMALL, TREE  # the small run every real-run test uses

from scotbed import topology as topo
from scotbed.broker import fleet
from scotbed.broker.launcher import LocalCluster
from scotbed.experiment.spec import SpecError, build_scot, parse_spec
from scotbed.orchestrator.backends.k8s import render as k8s
from scotbed.orchestrator.backends.local import LOCAL_ADDRESSING
from scotbed.orchestrator.down import down
from scotbed.orchestrator.plan import deployed_configs
from scotbed.orchestrator.render import compose
from scotbed.orchestrator.run import RunOptions, run_spec
from scotbed.orchestrator.state import load_all

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "experiments" / "quickstart.yaml"
RUN_ID = "quickstart-20250102T030405-0a1b2c3d"
PORT = 9464  # the containers' metrics port, as the README documents it


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))


def scrape(address: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """{sample name: {sorted labels: value}} of one endpoint."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def counters_of(samples: dict[str, Any], broker: str) -> dict[str, int]:
    return {
        dict(labels)["counter"]: int(v)
        for labels, v in samples.get("scotbed_messages", {}).items()
        if dict(labels)["broker"] == broker
    }


def scraped_equals_status(endpoints: dict[str, str], grpc: dict[str, str], timeout_s: float = 15.0) -> None:
    """Every endpoint's ``scotbed_messages`` equals its broker's Status counters (the endpoint
    refreshes once a second, so poll until they agree)."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = asyncio.run(fleet.status_all(grpc))
        scraped = {b: counters_of(scrape(a), b) for b, a in endpoints.items()}
        reported = {b: {k: int(v) for k, v in r.counters.items()} for b, r in status.items()}
        if scraped == reported or time.monotonic() > deadline:
            assert scraped == reported
            return
        time.sleep(0.5)


@pytest.mark.slow
def test_a_kept_run_serves_every_broker_s_series_at_its_topology_address(tmp_path: Path) -> None:
    result = run_spec(
        QUICKSTART,
        [*SMALL, *TREE, "routing=bid", "metrics.prometheus=true"],
        RunOptions(out=tmp_path / "runs", quiet=True, keep=True, analyse=False),
    )
    try:
        doc = json.loads((result.run_dir / "topology.json").read_text())
        brokers = {b["id"] for b in doc["brokers"]}
        assert set(doc["metrics"]) == brokers and len(brokers) == 7
        configs = json.loads((result.run_dir / "brokers.json").read_text())["brokers"]
        grpc = {c["id"]: c["listen"] for c in configs}
        assert doc["metrics"] == {c["id"]: f"127.0.0.1:{c['prometheus_port']}" for c in configs}
        assert len({*doc["metrics"].values(), *grpc.values()}) == 2 * len(brokers)

        scraped_equals_status(doc["metrics"], grpc)
        samples = {b: scrape(a) for b, a in doc["metrics"].items()}
        assert sum(counters_of(s, b).get("client_pub", 0) for b, s in samples.items()) == 2 * 40
        assert sum(counters_of(s, b).get("notif_in", 0) for b, s in samples.items()) > 0
        for b, s in samples.items():
            assert s["scotbed_input_queue_len"] == {(("broker", b),): 0.0}
            assert {dict(k)["broker"] for k in s["scotbed_match_us_count"]} == {b}
        assert sum(v for s in samples.values() for v in s["scotbed_match_us_count"].values()) > 0
    finally:
        report = down(run_id=result.run_id)
    assert len(report.processes) == 7 and report.errors == []
    assert load_all() == []


@pytest.mark.slow
def test_the_launcher_reserves_a_loopback_metrics_port_per_broker(tmp_path: Path) -> None:
    scot = topo.Scot(topo.path(2), 1)
    with LocalCluster.from_topology(scot, tmp_path, routing="flooding", prometheus_port=0) as cluster:
        endpoints = cluster.metrics_addresses()
        assert set(endpoints) == {"b-v0-0", "b-v1-0"}
        ports = {a.rpartition(":")[2] for a in [*endpoints.values(), *cluster.addresses().values()]}
        assert all(a.startswith("127.0.0.1:") for a in endpoints.values()) and "0" not in ports
        assert len(ports) == 4
        scraped_equals_status(endpoints, cluster.addresses())
        for b, a in endpoints.items():
            assert set(scrape(a)["scotbed_input_queue_len"]) == {(("broker", b),)}
            assert (
                f"{b}: Prometheus metrics on http://{a}/metrics"
                in (tmp_path / "logs" / f"{b}.err").read_text()
            )


def test_spec_metrics_block_defaults_off_and_is_strict() -> None:
    assert parse_spec({"name": "x"}).metrics.prometheus is False
    assert parse_spec({"name": "x", "metrics": {"prometheus": True}}).metrics.prometheus is True
    with pytest.raises(SpecError, match=r"metrics\.port"):
        parse_spec({"name": "x", "metrics": {"port": 9100}})
    with pytest.raises(SpecError, match=r"metrics\.prometheus"):
        parse_spec({"name": "x", "metrics": {"prometheus": "yes"}})


def test_peers_have_no_metrics_endpoint_to_switch_on() -> None:
    peers = {"name": "x", "routing": "vinifera", "topology": {"kind": "peers", "n": 6}}
    assert parse_spec(peers).metrics.prometheus is False
    with pytest.raises(SpecError, match=r"metrics\.prometheus: only brokers serve Prometheus metrics"):
        parse_spec({**peers, "metrics": {"prometheus": True}})


@pytest.mark.parametrize(
    ("addressing", "port"),
    [(LOCAL_ADDRESSING, 0), (compose.addressing(), PORT), (k8s.addressing("ns"), PORT)],
    ids=["local", "compose", "k8s"],
)
def test_broker_configs_get_a_metrics_port_only_when_on(addressing: Any, port: int) -> None:
    on = parse_spec({"name": "quickstart", "metrics": {"prometheus": True}})
    off = parse_spec({"name": "quickstart"})
    scot = build_scot(off)
    assert {c.prometheus_port for c in deployed_configs(off, scot, addressing, RUN_ID)} == {None}
    assert {c.prometheus_port for c in deployed_configs(on, scot, addressing, RUN_ID)} == {port}


def test_container_addresses_are_the_dialled_hosts_on_the_metrics_port() -> None:
    spec = parse_spec({"name": "quickstart", "metrics": {"prometheus": True}})
    scot = build_scot(spec)
    a = k8s.addressing("ns")
    assert a.metrics(deployed_configs(spec, scot, a, RUN_ID))["b-a-0"] == "b-a-0.brokers.ns.svc:9464"
    c = compose.addressing()
    assert c.metrics(deployed_configs(spec, scot, c, RUN_ID))["b-a-0"] == "b-a-0:9464"
    off = parse_spec({"name": "quickstart"})
    assert c.metrics(deployed_configs(off, scot, c, RUN_ID)) == {}


def test_metrics_off_renders_no_port_and_no_annotation() -> None:
    spec = parse_spec({"name": "quickstart"})
    scot = build_scot(spec)
    objects = k8s.render_k8s(
        deployed_configs(spec, scot, k8s.addressing("ns"), RUN_ID), RUN_ID, namespace="ns"
    )
    pods = [o for o in objects if o["kind"] == "Pod"]
    assert len(pods) == 18
    for pod in pods:
        assert "annotations" not in pod["metadata"]
        assert [p["name"] for p in pod["spec"]["containers"][0]["ports"]] == ["grpc"]
    (policy,) = [o for o in objects if o["kind"] == "NetworkPolicy"]
    assert len(policy["spec"]["ingress"]) == 1
    configs = deployed_configs(spec, scot, compose.addressing(), RUN_ID)
    assert all("expose" not in svc for svc in compose.render_compose(configs, RUN_ID)["services"].values())


def test_compose_services_expose_the_metrics_port_when_on() -> None:
    spec = parse_spec({"name": "quickstart", "metrics": {"prometheus": True}})
    configs = deployed_configs(spec, build_scot(spec), compose.addressing(), RUN_ID)
    services = compose.render_compose(configs, RUN_ID)["services"]
    assert {b: svc["expose"] for b, svc in services.items()} == {c.id: ["9464"] for c in configs}
