"""Routing plug-ins in the simulator: exact message counts, exactly-once delivery, state removal."""

from __future__ import annotations

import pytest
from broker_workload import make_workload

from scotbed import topology
from scotbed.broker.sim import SimNetwork
from scotbed.filters import Filter
from scotbed.messages import Publication, Subscription, Unsubscription

TREE = topology.tree(topology.kary(2, 2))
FIG2_K3 = topology.Scot(topology.paper_fig2(), 3)
FIG8_K5 = topology.Scot(topology.paper_fig8(), 5)


def _bid_cost(scot: topology.Scot) -> int:
    return 2 * len(scot.links) - len(scot.brokers) + 1


def test_rpf_subscription_costs_n_minus_1_and_unsubscription_clears_every_table() -> None:
    net = SimNetwork(TREE, "rpf", matching="counting")
    assert net.subscribe("s1", "b-v3-0", 'symbol = "IBM"') == len(TREE.brokers) - 1 == 6
    assert set(net.table_sizes().values()) == {1}
    entry = net.brokers["b-v0-0"].table.get("s1")
    assert entry is not None and entry.last_hop == "b-v1-0"
    assert net.unsubscribe("s1") == 6
    assert set(net.table_sizes().values()) == {0}


@pytest.mark.parametrize("scot", [TREE, FIG2_K3, FIG8_K5], ids=["tree7", "fig2xK3", "fig8xK5"])
def test_bid_subscription_costs_2e_minus_n_plus_1(scot: topology.Scot) -> None:
    net = SimNetwork(scot, "bid", matching="counting")
    host = scot.brokers[len(scot.brokers) // 2].id
    assert net.subscribe("s1", host, "price > 1") == _bid_cost(scot)
    subs = [s for s in net.sent if isinstance(s.msg, Subscription)]
    assert all(s.msg.host_broker == host for s in subs)
    assert set(net.table_sizes().values()) == {1}
    assert net.unsubscribe("s1") == _bid_cost(scot)
    assert set(net.table_sizes().values()) == {0}


def test_bid_cost_on_paper_fig8_k5_is_366() -> None:
    assert _bid_cost(FIG8_K5) == 366
    assert SimNetwork(FIG8_K5, "bid").subscribe("s", "b-i2-0", "") == 366


@pytest.mark.parametrize(
    ("scot", "routing"),
    [
        (TREE, "flooding"),
        (TREE, "rpf"),
        (TREE, "bid"),
        (FIG2_K3, "flooding"),
        (FIG2_K3, "bid"),
        (FIG8_K5, "bid"),
    ],
    ids=["tree-flooding", "tree-rpf", "tree-bid", "fig2-flooding", "fig2-bid", "fig8-bid"],
)
def test_every_matching_subscriber_gets_each_notification_exactly_once(
    scot: topology.Scot, routing: str
) -> None:
    brokers = [b.id for b in scot.brokers]
    wl = make_workload(brokers, n_subs=40, n_pubs=60, seed=len(brokers))
    net = SimNetwork(scot, routing, matching="counting")
    for sub_id, host, flt in wl.subs:
        net.subscribe(sub_id, host, flt)
    for pub_id, host, attrs in wl.pubs:
        net.publish(pub_id, host, attrs)
    wl.assert_delivered_exactly_once(net)


def test_bid_matches_only_at_the_publisher_host_and_matching_hosts() -> None:
    net = SimNetwork(FIG2_K3, "bid")
    net.subscribe("s1", "b-f-2", 'symbol = "IBM"')
    net.subscribe("s2", "b-c-1", 'symbol = "IBM"')
    net.subscribe("s3", "b-d-0", 'symbol = "SUN"')
    net.matched_at.clear()
    net.publish("p1", "b-a-0", {"symbol": "IBM"})
    assert set(net.matched_at) == {"b-a-0", "b-f-2", "b-c-1"}
    assert net.deliveries == {("p1", "s1"): 1, ("p1", "s2"): 1}
    copies = net.sent_for("p1")
    assert all(isinstance(s.msg, Publication) and s.src != s.dst for s in copies)
    assert len(copies) == len({(s.src, s.dst) for s in copies})


def test_match_steps_are_those_of_the_table_the_broker_matched() -> None:
    """A BID broker matches its local table, an SNR publisher's host its secondary table too: steps say so."""
    net = SimNetwork(FIG2_K3, "bid", matching="pst")
    net.subscribe("s1", "b-f-2", 'symbol = "IBM"')
    algo = net.brokers["b-f-2"]  # never the publisher's host: its whole table never matched
    d = algo.on_publication(Publication("p1", "x", {"symbol": "IBM"}, bids=("b-f-2",)), "b-f-1")
    assert d.deliver == ["s1"] and algo.match_steps(d) == algo.local.last_steps
    assert algo.table.last_steps is None and isinstance(algo.match_steps(d), int)
    snr = SimNetwork(FIG2_K3, "snr", matching="pst")
    snr.subscribe("s2", "b-f-2", 'symbol = "IBM"')
    phb = snr.brokers["b-a-0"]
    d = phb.on_publication(Publication("p2", "x", {"symbol": "IBM"}), None)
    both = phb.table.last_steps + phb.secondary.last_steps  # type: ignore[attr-defined]
    assert phb.secondary.last_steps >= 1 and phb.match_steps(d) == both  # type: ignore[attr-defined]


def test_bid_late_subscription_copy_does_not_resurrect_a_removed_subscription() -> None:
    net = SimNetwork(FIG2_K3, "bid")
    algo = net.brokers["b-c-0"]
    net_filter = Filter.parse("x > 1")
    assert algo.on_subscription(Subscription("s1", net_filter, "b-a-0", origin_ns=5), "b-b-0").stored
    assert algo.on_unsubscription(Unsubscription("s1", "b-a-0"), "b-b-0").stored
    late = algo.on_subscription(Subscription("s1", net_filter, "b-a-0", origin_ns=5), "b-c-1")
    assert late.duplicate and not late.forwards and algo.table_size() == 0
    again = algo.on_subscription(Subscription("s1", net_filter, "b-a-0", origin_ns=9), "b-c-1")
    assert again.stored and algo.table_size() == 1
