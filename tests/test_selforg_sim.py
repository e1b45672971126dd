"""The simulator and the swap protocol: invariants on random runs, and agreement with the
synchronous driver on a small case whose answer is unique.

Random runs (12 brokers, random costs and load, three heuristics, three seeds) check after the
fact: every tree version is a spanning tree, no broker held two swaps' locks at once, every
notification reached each of its subscribers exactly once, and each subscriber saw each
publisher's notifications in publication order, while swaps happened and notifications were parked.
"""

from __future__ import annotations

from collections import Counter

import pytest

from scotbed.contract import LINK_DOWN, LINK_UP
from scotbed.selforg.costs import Costs, total_cost
from scotbed.selforg.heuristics import heuristic
from scotbed.selforg.settle import settle
from scotbed.selforg.sim import Outcome, Setup, Simulation
from scotbed.selforg.simload import Workload
from scotbed.selforg.swapwave import Parking, Send, Versions
from scotbed.selforg.tree import Tree

SMALL = {"cache_size": 512, "bloom_bits": 8192}


def check_invariants(out: Outcome) -> None:
    assert all(t.is_spanning_tree() for t in out.trees)
    for before, after in zip(out.trees, out.trees[1:], strict=False):
        assert len(before.links ^ after.links) == 2  # one link in, one out
    held: dict[str, str] = {}
    for _, broker, swap, what in out.locks:
        if what == "take":
            assert broker not in held, f"{broker} takes {swap} while holding {held.get(broker)}"
            held[broker] = swap
        else:
            assert held.pop(broker) == swap
    assert held == {}
    ups = {v: (t, e) for t, ev, e, v in out.links if ev == LINK_UP}
    downs = {v: (t, e) for t, ev, e, v in out.links if ev == LINK_DOWN}
    assert [ups[s.inputs["version"]][1] for s in out.swaps] == [s.inputs["add"] for s in out.swaps]
    assert [downs[s.inputs["version"]][1] for s in out.swaps] == [s.inputs["remove"] for s in out.swaps]
    assert all(downs[v][0] >= ups[v][0] for v in ups)  # e_r closes only after e_n is up
    assert out.expected and out.delivered == out.expected
    assert set(out.delivered.values()) == {1}
    for seqs in out.order.values():
        assert seqs == sorted(set(seqs))


@pytest.mark.parametrize("name", ["ci", "lmst", "lmit"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_runs_keep_the_invariants(name: str, seed: int) -> None:
    load = Workload(brokers=12, types=4, subscribers=3, publish_rate=0.2, unsubscribe_rate=0.002)
    setup = Setup(load=load, heuristic=name, duration=3000, seed=seed, redraws=((1500, "links"),), **SMALL)
    out = Simulation(setup).run()
    check_invariants(out)
    assert len(out.swaps) >= 1
    assert out.total("end") > 0 and out.total("newver") > 0


def test_parking_and_overlapping_swaps_keep_the_oracle() -> None:
    """Slow links and short periods: several versions' END waves run at once and many
    notifications wait in parking; delivery stays exactly once and in order."""
    load = Workload(brokers=16, types=6, subscribers=4, publish_rate=0.5, unsubscribe_rate=0.003)
    runs = [
        Simulation(
            Setup(load=load, heuristic=name, duration=2000, seed=2, latency_scale=3.0, period=100, **SMALL)
        ).run()
        for name in ("ci", "lmst")
    ]
    for out in runs:
        check_invariants(out)
        assert out.parked > 0
    assert max(out.overlap for out in runs) >= 2
    capped = Simulation(
        Setup(
            load=load,
            heuristic="ci",
            duration=2000,
            seed=2,
            latency_scale=3.0,
            period=100,
            open_versions=1,
            **SMALL,
        )
    ).run()
    check_invariants(capped)
    assert capped.overlap == 1 and len(capped.swaps) >= 1


def test_static_tree_costs_eq2() -> None:
    """Without a heuristic the measured cost is Eq. 2 over the published notifications."""
    tree = Tree.of([("a", "b"), ("b", "c")])
    costs = Costs(links={("a", "b"): 2, ("b", "c"): 3}, brokers={"a": 1, "b": 4, "c": 5})
    setup = Setup(load=Workload(publish_rate=0.1), duration=1000, fixed=(("a", ("c",)),), **SMALL)
    out = Simulation(setup, tree, costs).run()
    check_invariants(out)
    sent = len(out.expected)
    assert sent > 50
    assert out.total("notification") == pytest.approx(sent * (1 + 2 + 4 + 3 + 5))
    assert out.total("notification") == pytest.approx(
        total_cost(tree.adjacency, costs, [("a", ["c"])] * sent)
    )


SIX = Tree.of([("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f")])
SIX_COSTS = Costs(links={("a", "b"): 2, ("b", "c"): 2, ("c", "d"): 20, ("d", "e"): 2, ("e", "f"): 2})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sim_agrees_with_settle_on_six_brokers(seed: int) -> None:
    """a publishes to f only: a–f is the one pair with interest; every cut of R but e_n = a–f
    leaves a and f adjacent, so the vector ties and the least name, a–b, goes (both drivers)."""
    caches = {"a": {"n"}, "f": {"n"}}
    reference = settle(SIX, SIX_COSTS, caches, heuristic("ci"), eta=5)
    [swap] = reference.swaps
    assert (swap.inputs["add"], swap.inputs["remove"]) == (("a", "f"), ("a", "b"))
    setup = Setup(heuristic="ci", eta=5, duration=3000, fixed=(("a", ("f",)),), seed=seed, **SMALL)
    out = Simulation(setup, SIX, SIX_COSTS).run()
    check_invariants(out)
    assert [(s.inputs["add"], s.inputs["remove"]) for s in out.swaps] == [(("a", "f"), ("a", "b"))]
    assert out.trees[-1] == reference.tree
    lmst = Simulation(
        Setup(heuristic="lmst", eta=5, duration=3000, fixed=(("a", ("f",)),), seed=seed, **SMALL),
        SIX,
        SIX_COSTS,
    ).run()
    [only] = lmst.swaps
    assert only.inputs["remove"] == ("c", "d") and SIX_COSTS.link(*only.inputs["add"]) == 10


def test_end_wave_on_a_path() -> None:
    """a–b–c becomes b–c–a (a–b out, a–c in): END(0) crosses every T_0 link both ways."""
    tree = Tree.of([("a", "b"), ("b", "c")])
    v = {x: Versions.start(x, tree.adjacency[x]) for x in "abc"}
    add, remove = ("a", "c"), ("a", "b")
    assert v["a"].adopt(1, add, remove) == [Send("b", 0)]  # a leaf of T_0 starts at once
    assert v["a"].neighbours[1] == {"c"} and not v["a"].ready(1)
    assert v["c"].adopt(1, add, remove) == [Send("b", 0)]
    assert v["b"].on_end(0, "a") == []  # b has not adopted v1 yet
    assert v["b"].adopt(1, add, remove) == [Send("c", 0)]  # END(0) from a, not yet from c
    assert not v["b"].ready(1)
    assert v["b"].on_end(0, "c") == [Send("a", 0)]
    assert v["b"].ready(1) and v["b"].closed(0) == "a"
    assert v["a"].closed(0) is None
    assert v["a"].on_end(0, "b") == [] and v["a"].ready(1) and v["a"].closed(0) == "b"
    parking = Parking()
    assert not parking.admit(v["c"], 1, "x") and list(parking.release(v["c"])) == []
    v["c"].on_end(0, "b")
    assert list(parking.release(v["c"])) == ["x"]
    assert Counter(x.finished for x in v.values()) == Counter({0: 3})
