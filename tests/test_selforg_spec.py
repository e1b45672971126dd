"""``topology.costs`` and ``topology.self_organising`` in the spec: defaults from scotbed.selforg,
clear errors naming the key."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from scotbed.experiment.spec import SpecError, dump_spec, parse_spec
from scotbed.selforg.costs import DEFAULT_BROKER, DEFAULT_LINK


def errors(topology: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as e:
        parse_spec({"name": "x", "routing": "rpf", "topology": {"kind": "tree", **topology}})
    return e.value.problems


def test_costs_parse_and_round_trip() -> None:
    doc = {
        "name": "x",
        "routing": "rpf",
        "topology": {"kind": "tree", "costs": {"links": [["a", "f", 3.5]], "brokers": {"b": 2.0}}},
    }
    spec = parse_spec(doc)
    assert spec.topology.costs is not None
    costs = spec.topology.costs.costs()
    assert (costs.link("f", "a"), costs.link("a", "b"), costs.broker("b"), costs.broker("c")) == (
        3.5,
        DEFAULT_LINK,
        2.0,
        DEFAULT_BROKER,
    )
    assert parse_spec(yaml.safe_load(dump_spec(spec))).topology.costs == spec.topology.costs


@pytest.mark.parametrize(
    ("costs", "fragment"),
    [
        ({"links": [["a", "z", 1.0]]}, "topology.costs: z not vertices of topology.acyclic"),
        ({"links": [["a", "a", 1.0]]}, r"topology.costs.links[0]: a link needs two brokers"),
        ({"links": [["a", "b", 1.0], ["b", "a", 2.0]]}, "topology.costs.links[1]: link b-a listed twice"),
        ({"brokers": {"q": 1.0}}, "topology.costs: q not vertices"),
        ({"default_link": -1.0}, "topology.costs.default_link"),
        ({"links": [["a", "b"]]}, "topology.costs.links[0]: want [u, v, cost]"),
        ({"bogus": 1}, "topology.costs.bogus: unknown key"),
    ],
)
def test_costs_errors(costs: dict[str, Any], fragment: str) -> None:
    assert any(fragment in p for p in errors({"costs": costs})), errors({"costs": costs})


def test_self_organising_is_validated_and_needs_a_routing_that_follows_dynamic_links() -> None:
    assert any(
        "unknown heuristic; allowed: ci, lmst, lmit" in p
        for p in errors({"self_organising": {"heuristic": "x"}})
    )
    assert any(
        "topology.self_organising.eta" in p
        for p in errors({"self_organising": {"heuristic": "ci", "eta": 0}})
    )
    assert (
        parse_spec(
            {
                "name": "x",
                "routing": "rpf",
                "topology": {"kind": "tree", "self_organising": {"heuristic": "ci"}},
            }
        ).topology.self_organising
        is not None
    )
    with pytest.raises(SpecError) as e:
        parse_spec(
            {
                "name": "x",
                "routing": "flooding",
                "topology": {"kind": "tree", "self_organising": {"heuristic": "ci"}},
            }
        )
    assert e.value.problems == [
        "topology.self_organising: routing 'flooding' does not follow dynamic links; "
        "the topology manager needs one that does (docs/self-organising.md)"
    ]
    with pytest.raises(SpecError, match="needs an acyclic overlay"):
        parse_spec({"name": "x", "topology": {"kind": "scot", "self_organising": {"heuristic": "lmst"}}})


def test_the_manager_block_names_brokers_and_carries_the_tree_and_the_settings() -> None:
    from scotbed.experiment.spec import build_scot
    from scotbed.orchestrator.plan import broker_configs

    spec = parse_spec(
        {
            "name": "x",
            "routing": "rpf",
            "topology": {
                "kind": "tree",
                "acyclic": {"kind": "path", "n": 3},
                "costs": {"links": [["v0", "v2", 2.0]], "brokers": {"v1": 4.0}},
                "self_organising": {"heuristic": "lmst", "period_ms": 500.0},
            },
        }
    )
    scot = build_scot(spec)
    blocks = {
        c.id: c.topology_manager for c in broker_configs(spec, scot, {b.id: "x:1" for b in scot.brokers})
    }
    block = blocks["b-v0-0"]
    assert all(b == block for b in blocks.values())
    assert block["tree"] == [["b-v0-0", "b-v1-0"], ["b-v1-0", "b-v2-0"]]
    assert block["costs"]["links"] == [["b-v0-0", "b-v2-0", 2.0]]
    assert block["costs"]["brokers"] == {"b-v1-0": 4.0}
    assert (block["heuristic"], block["period_ms"], block["eta"]) == ("lmst", 500.0, 4)
