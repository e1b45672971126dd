"""The experiment spec: defaults, --set, and errors that name the key path."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from scotbed import routing as routing_registry
from scotbed.experiment.overrides import apply_sets
from scotbed.experiment.spec import SpecError, build_scot, dump_spec, load_spec, parse_spec
from scotbed.orchestrator import plan

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"


def errors(doc: dict[str, Any], sets: tuple[str, ...] = ()) -> list[str]:
    with pytest.raises(SpecError) as e:
        parse_spec(doc, sets)
    return e.value.problems


def test_defaults_make_a_runnable_spec() -> None:
    spec = parse_spec({"name": "x"})
    assert spec.topology.kind == "scot" and spec.topology.m == 3
    assert spec.routing == "snr" and spec.matching == "counting" and spec.backend == "local"
    assert spec.workload.rate_per_minute == 600 and spec.workload.placement.mode == "random"
    assert spec.timeouts.ready_s > 0 and spec.analysis.stability_window == 1000
    assert parse_spec({"name": "t", "topology": {"kind": "tree"}, "routing": "rpf"}).topology.m == 1


def test_resolved_spec_round_trips() -> None:
    spec = load_spec(EXPERIMENTS / "paper-fig8.yaml")
    text = dump_spec(spec)
    again = parse_spec(yaml.safe_load(text))
    assert again.model_dump() == spec.model_dump()
    assert yaml.safe_load(text)["topology"]["acyclic"] == "paper-fig8"  # short forms stay short


def test_set_coerces_yaml_scalars() -> None:
    spec = parse_spec(
        {"name": "x"},
        (
            "workload.subscribers=100",
            "workload.selectivity=0.5",
            "links.capacity_msgs_per_s=2e3",
            "workload.hrp={rate_per_minute: 6000, notifications: 10}",
            "topology.acyclic={kind: kary, fanout: 2, depth: 3}",
            "routing=dnr",
        ),
    )
    assert spec.workload.subscribers == 100 and isinstance(spec.workload.subscribers, int)
    assert spec.workload.selectivity == 0.5
    assert spec.links.capacity_msgs_per_s == 2000.0
    assert spec.workload.hrp is not None and spec.workload.hrp.notifications == 10
    assert len(build_scot(spec).brokers) == 15 * 3
    assert spec.routing == "dnr"


def test_set_does_not_touch_its_input() -> None:
    doc: dict[str, Any] = {"name": "x", "workload": {"subscribers": 1}}
    assert apply_sets(doc, ["workload.subscribers=2"])["workload"]["subscribers"] == 2
    assert doc["workload"]["subscribers"] == 1


@pytest.mark.parametrize(
    ("item", "fragment"),
    [
        ("workload.subscribers", "expected key.path=value"),
        ("=3", "expected key.path=value"),
        ("name.x=3", "name is 'x', not a mapping"),
    ],
)
def test_bad_set(item: str, fragment: str) -> None:
    assert fragment in errors({"name": "x"}, (item,))[0]


def test_unknown_key_names_path_and_allowed_keys() -> None:
    (msg,) = errors({"name": "x", "workload": {"subscriberz": 3}})
    assert msg.startswith("workload.subscriberz: unknown key")
    assert "subscribers" in msg and "rate_per_minute" in msg
    (msg,) = errors({"name": "x", "topology": {"acyclic": {"kind": "kary", "fanout": 2, "depth": 1, "x": 0}}})
    assert msg.startswith("topology.acyclic.x: unknown key; allowed here: kind, fanout, depth")


def test_cyclic_acyclic_factor(tmp_path: Path) -> None:
    (tmp_path / "ring.edges").write_text("a b\nb c\nc a\n")
    (tmp_path / "spec.yaml").write_text(
        "name: ring\ntopology: {kind: tree, acyclic: {kind: edges, file: ring.edges}}\nrouting: rpf\n"
    )
    spec = load_spec(tmp_path / "spec.yaml")  # the schema is fine; the file is read by build_scot
    with pytest.raises(SpecError) as e:
        build_scot(spec)
    assert str(e.value).startswith("topology.acyclic: ")
    assert "not a tree: cycle" in str(e.value)


def test_factor_files_are_relative_to_the_spec(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "t.edges").write_text("a b\nb c\n")
    (tmp_path / "s.yaml").write_text(
        "name: t\ntopology: {kind: scot, acyclic: {kind: edges, file: sub/t.edges}}\n"
    )
    assert len(build_scot(load_spec(tmp_path / "s.yaml")).brokers) == 9
    (tmp_path / "m.yaml").write_text("name: t\ntopology: {acyclic: {kind: graphml, file: nope.graphml}}\n")
    with pytest.raises(SpecError, match=r"^topology.acyclic.file: cannot read .*nope.graphml"):
        build_scot(load_spec(tmp_path / "m.yaml"))


def test_snr_on_a_tree() -> None:
    (msg,) = errors({"name": "x", "topology": {"kind": "tree"}, "routing": "snr"})
    assert msg.startswith("topology.connectivity: routing 'snr' needs a SCOT with connectivity >= 2")
    (msg,) = errors({"name": "x", "topology": {"kind": "scot", "connectivity": 1}, "routing": "dnr"})
    assert msg.startswith("topology.connectivity: routing 'dnr'")


@pytest.mark.parametrize(
    "routing", ["rpf", "covering-active", "covering-lazy", "covering-packing", "selective-pruning"]
)
def test_acyclic_routing_on_a_scot(routing: str) -> None:
    msgs = errors({"name": "x", "topology": {"kind": "scot", "connectivity": 2}, "routing": routing})
    expected = f"topology.connectivity: routing {routing!r} needs an acyclic overlay"
    assert any(m.startswith(expected) for m in msgs)


def test_known_but_unimplemented_routing_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    routing = "not-built"  # every registered algorithm is built: register one whose module is absent
    monkeypatch.setitem(routing_registry.ALGORITHMS, routing, "scotbed.routing.not_built:NotBuilt")
    (msg,) = errors({"name": "x", "topology": {"kind": "tree"}, "routing": routing})
    assert msg.startswith(f"routing: {routing!r} is a known algorithm but not implemented in this build")
    assert "snr" in msg and "bid" in msg  # names what is implemented


@pytest.mark.parametrize("routing", ["bid", "flooding", "link-matching"])
@pytest.mark.parametrize("topology", [{"kind": "tree"}, {"kind": "scot", "connectivity": 4}])
def test_any_overlay_routing(routing: str, topology: dict[str, Any]) -> None:
    assert parse_spec({"name": "x", "topology": topology, "routing": routing}).routing == routing


@pytest.mark.parametrize(
    ("doc", "prefix"),
    [
        (
            {"workload": {"rate_per_minute": -5}},
            "workload.rate_per_minute: -5 is not allowed: input should be greater than 0",
        ),
        ({"links": {"capacity_msgs_per_s": -1}}, "links.capacity_msgs_per_s: -1 is not allowed"),
        ({"links": {"icol_capacity_msgs_per_s": -1}}, "links.icol_capacity_msgs_per_s: -1 is not allowed"),
        (
            {"workload": {"hrp": {"rate_per_minute": -1, "notifications": 5}}},
            "workload.hrp.rate_per_minute: -1",
        ),
        ({"workload": {"churn": {"rate_per_minute": -2}}}, "workload.churn.rate_per_minute: -2"),
        ({"workload": {"selectivity": 1.5}}, "workload.selectivity: 1.5 is not allowed"),
        ({"workload": {"time_scale": 0}}, "workload.time_scale: 0 is not allowed"),
        ({"congestion": {"window_ms": 0}}, "congestion.window_ms: 0 is not allowed"),
        ({"timeouts": {"drain_s": -1}}, "timeouts.drain_s: -1 is not allowed"),
        (
            {"routing": "octopus"},
            "routing: 'octopus' is not allowed: unknown routing algorithm; allowed: flooding",
        ),
        (
            {"matching": "fast"},
            "matching: 'fast' is not allowed: input should be 'naive', 'counting' or 'pst'",
        ),
        ({"backend": "slurm"}, "backend: 'slurm' is not allowed"),
        ({"workload": {"placement": "nearby"}}, "workload.placement.mode: 'nearby' is not allowed"),
        (
            {"workload": {"churn": {"rate_per_minute": 1, "mobility": "anywhere"}}},
            "workload.churn.mobility: 'anywhere' is not allowed",
        ),
        ({"topology": {"acyclic": "fig3"}}, "topology.acyclic: 'fig3' is not allowed; allowed: 'paper-fig2'"),
        ({"topology": {"acyclic": {"fanout": 2}}}, "topology.acyclic: {'fanout': 2} needs a 'kind'"),
        ({"topology": {"acyclic": {"kind": "kary", "fanout": 0, "depth": 1}}}, "topology.acyclic.fanout: 0"),
        (
            {"topology": {"acyclic": {"kind": "kary", "fanout": 2}}},
            "topology.acyclic.depth: required key is missing",
        ),
        ({"topology": {"connectivity": 0}}, "topology.connectivity: 0 is not allowed"),
        ({"workload": {"subscribers": "many"}}, "workload.subscribers: 'many' is not allowed"),
        (
            {"workload": {"hrp": {"rate_per_minute": 5}}},
            "workload.hrp.notifications: required key is missing",
        ),
    ],
)
def test_value_errors_name_path_and_value(doc: dict[str, Any], prefix: str) -> None:
    (msg,) = errors({"name": "x", **doc})
    assert msg.startswith(prefix), msg


def test_name_is_checked() -> None:
    assert errors({})[0] == "name: required key is missing"
    assert errors({"name": "Bad_Name"})[0].startswith("name: 'Bad_Name' is not allowed")
    assert errors({"name": "x" * 39})[0].startswith("name: ")


@pytest.mark.parametrize(
    ("workload", "fragment"),
    [
        ({"unsub_burst": {"count": 2}}, "workload.unsub_burst: needs workload.covering"),
        ({"hrp": {"rate_per_minute": 60, "notifications": 5}, "covering": {}}, "workload.covering: "),
    ],
)
def test_workload_cross_checks(workload: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SpecError, match=re.escape(fragment)):
        parse_spec({"name": "x", "workload": workload})


def test_churn_in_a_region_needs_clusters() -> None:
    doc = {
        "name": "x",
        "topology": {"kind": "tree", "acyclic": "paper-fig2"},
        "routing": "rpf",
        "workload": {"churn": {"rate_per_minute": 6, "mobility": "region"}},
    }
    with pytest.raises(SpecError, match=r"workload\.churn\.mobility: 'region' needs a SCOT"):
        parse_spec(doc)


def test_all_problems_at_once() -> None:
    problems = errors({"name": "x", "routing": "nope", "workload": {"publishers": -1, "extra": 1}})
    assert [p.split(":")[0] for p in problems] == ["routing", "workload.publishers", "workload.extra"]


def test_tree_with_clusters_and_broker_limit() -> None:
    (msg,) = errors({"name": "x", "topology": {"kind": "tree", "connectivity": 3}, "routing": "bid"})
    assert msg.startswith("topology.connectivity: 3 is not allowed for kind tree")
    (msg,) = errors({"name": "x", "topology": {"acyclic": {"kind": "kary", "fanout": 10, "depth": 6}}})
    assert msg.startswith("topology: 1111111 vertices")


def test_placement_checks() -> None:
    (msg,) = errors({"name": "x", "workload": {"placement": {"mode": "per-cluster", "clusters": [0, 3]}}})
    assert msg == "workload.placement.clusters[1]: 3 is not a cluster; allowed: 0..2"
    (msg,) = errors({"name": "x", "workload": {"placement": "explicit"}})
    assert msg.startswith("workload.placement.brokers: mode explicit needs a map")
    (msg,) = errors({"name": "x", "workload": {"placement": {"mode": "edge", "clusters": [0]}}})
    assert msg.startswith("workload.placement.clusters: only used with mode per-cluster")


def test_yaml_and_file_errors(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("name: x\nworkload: {subscribers: 3\n")
    with pytest.raises(SpecError, match=r"bad.yaml:3:1: not valid YAML"):
        load_spec(tmp_path / "bad.yaml")
    with pytest.raises(SpecError, match="no such spec file"):
        load_spec(tmp_path / "missing.yaml")
    (tmp_path / "list.yaml").write_text("- a\n")
    with pytest.raises(SpecError, match="must be a mapping"):
        load_spec(tmp_path / "list.yaml")


@pytest.mark.parametrize("name", ["quickstart.yaml", "paper-fig8.yaml"])
def test_shipped_experiments_are_valid(name: str) -> None:
    spec = load_spec(EXPERIMENTS / name)
    scot = build_scot(spec)
    clients = plan.client_plan(spec, scot)
    assert len(clients.subscribers) == spec.workload.subscribers


# --- the deployment plan ----------------------------------------------------------------------


def test_broker_configs_carry_spec_and_scaled_capacities() -> None:
    spec = parse_spec(
        {
            "name": "x",
            "routing": "dnr",
            "links": {"capacity_msgs_per_s": 100, "icol_capacity_msgs_per_s": 40},
            "congestion": {"window_ms": 20, "queue_threshold": 7},
            "workload": {"time_scale": 2},
        }
    )
    scot = build_scot(spec)
    addrs = {b.id: f"127.0.0.1:{5000 + k}" for k, b in enumerate(scot.brokers)}
    configs = plan.broker_configs(spec, scot, addrs, run_id="r1")
    assert [c.id for c in configs] == [b.id for b in scot.brokers]
    c = configs[0]
    assert (c.routing, c.matching, c.run_id, c.clusters) == ("dnr", "counting", "r1", 3)
    assert c.link_capacity_msgs_per_s == 50.0  # divided by time_scale
    assert c.congestion.window_ms == 20 and c.congestion.queue_threshold == 7
    assert c.routing_params == {}
    bid = parse_spec({"name": "x", "routing": "bid", "routing_params": {"tombstone_capacity": 10}})
    (b0, *_) = plan.broker_configs(bid, build_scot(bid), addrs, run_id="r1")
    assert b0.routing_params == {"tombstone_capacity": 10}
    for cfg in configs:
        for n in cfg.neighbours:
            assert n.address == addrs[n.id]
            assert n.capacity_msgs_per_s == (20.0 if n.kind == "iCOL" else None)


def test_client_plan_is_seeded_and_groups_are_independent() -> None:
    spec = parse_spec({"name": "x", "workload": {"subscribers": 20, "publishers": 4}})
    scot = build_scot(spec)
    a = plan.client_plan(spec, scot)
    assert a == plan.client_plan(spec, scot)
    assert list(a.subscribers) == [f"s{k:02d}" for k in range(20)] and a.hrp == {}
    more = parse_spec({"name": "x", "workload": {"subscribers": 20, "publishers": 9}})
    assert plan.client_plan(more, scot).subscribers == a.subscribers
    other = parse_spec({"name": "x", "seed": 5, "workload": {"subscribers": 20, "publishers": 4}})
    assert plan.client_plan(other, scot).subscribers != a.subscribers


def test_explicit_placement_through_the_plan() -> None:
    brokers = {"s0": "b-a-0", "p0": "b-f-2"}
    spec = parse_spec(
        {
            "name": "x",
            "workload": {
                "subscribers": 1,
                "publishers": 1,
                "placement": {"mode": "explicit", "brokers": brokers},
            },
        }
    )
    scot = build_scot(spec)
    assert plan.client_plan(spec, scot).all() == brokers
    wrong = spec.model_copy(deep=True)
    assert wrong.workload.placement.brokers is not None
    wrong.workload.placement.brokers["s9"] = "b-a-0"
    with pytest.raises(SpecError, match=r"workload\.placement\.brokers: s9 not a client"):
        plan.client_plan(wrong, scot)
    wrong.workload.placement.brokers = {"s0": "b-zz-0", "p0": "b-a-0"}
    with pytest.raises(SpecError, match=r"workload\.placement: client 's0' names unknown broker 'b-zz-0'"):
        plan.client_plan(wrong, scot)


def test_run_id_format() -> None:
    from datetime import UTC, datetime

    rid = plan.make_run_id("quickstart", datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC), "0a1b2c3d")
    assert rid == "quickstart-20250102T030405-0a1b2c3d"
    assert len(plan.make_run_id("x" * 38)) == 63


def test_validate_catches_a_workload_only_the_generators_can_refuse() -> None:
    from scotbed.orchestrator.plan import workload_plan

    spec = parse_spec(
        {
            "name": "x",
            "topology": {"kind": "tree"},
            "routing": "covering-lazy",
            "workload": {"covering": {"degree": 50}, "selectivity": 0.1},
        }
    )
    scot = build_scot(spec)
    with pytest.raises(SpecError, match=r"^workload: covering degree 50\.0 x selectivity 0\.1"):
        workload_plan(spec, scot, {b.id: "x:1" for b in scot.brokers})
