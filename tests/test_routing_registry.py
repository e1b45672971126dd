"""The routing registry is the one home of algorithm names, overlay requirements and parameters."""

from __future__ import annotations

import pytest

from scotbed import routing
from scotbed.config import BrokerConfig, ConfigError
from scotbed.experiment.spec import SpecError, parse_spec


def test_every_implemented_class_carries_its_registry_name() -> None:
    assert routing.implemented() == [
        "flooding",
        "rpf",
        "covering-active",
        "covering-lazy",
        "covering-packing",
        "selective-pruning",
        "bid",
        "snr",
        "dnr",
        "link-matching",
    ]
    for name in routing.implemented():
        assert routing.algorithm_class(name).name == name


def test_overlay_requirements_are_declared_by_the_plugins() -> None:
    acyclic = [n for n in routing.implemented() if routing.algorithm_class(n).requires_acyclic]
    clustered = [n for n in routing.implemented() if routing.algorithm_class(n).requires_clusters]
    assert acyclic == ["rpf", "covering-active", "covering-lazy", "covering-packing", "selective-pruning"]
    assert clustered == ["snr", "dnr"]


def test_unbuilt_algorithm_is_refused_with_the_implemented_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(routing.ALGORITHMS, "not-built", "scotbed.routing.not_built:NotBuilt")
    with pytest.raises(ValueError, match=r"'not-built' is not implemented in this build; implemented: f"):
        routing.algorithm_class("not-built")


def _spec_errors(doc: dict[str, object]) -> list[str]:
    with pytest.raises(SpecError) as e:
        parse_spec({"name": "x", **doc})
    return e.value.problems


def test_unknown_routing_param_is_a_spec_error_naming_it() -> None:
    assert _spec_errors({"routing": "dnr", "routing_params": {"k": 1}}) == [
        "routing_params.k: 'dnr' has no parameter 'k'; its parameters: none"
    ]
    assert _spec_errors({"routing": "bid", "routing_params": {"tombstone_capacity": "many"}}) == [
        "routing_params.tombstone_capacity: 'many' is not allowed; expected int (default 1000000)"
    ]
    ok = parse_spec({"name": "x", "routing": "flooding", "routing_params": {"seen_capacity": 5}})
    assert ok.routing_params == {"seen_capacity": 5}


def test_broker_config_refuses_an_unknown_routing_param() -> None:
    doc = {"id": "b", "vertex": "a", "index": 0, "type": "edge", "listen": "127.0.0.1:0"}
    assert BrokerConfig.from_json({**doc, "routing": "bid", "routing_params": {"tombstone_capacity": 3}})
    with pytest.raises(ConfigError, match=r"^b\.routing_params\.x: 'bid' has no parameter 'x'"):
        BrokerConfig.from_json({**doc, "routing": "bid", "routing_params": {"x": 3}}, "b")


def test_a_declared_param_reaches_the_plugin() -> None:
    from scotbed import topology
    from scotbed.broker.sim import SimNetwork

    tree = topology.tree(topology.path(2))
    net = SimNetwork(tree, "flooding", matching="naive", params={"seen_capacity": 7})
    algo = net.brokers["b-v0-0"]
    assert algo.param("seen_capacity") == 7 and algo._capacity == 7
