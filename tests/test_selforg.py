"""The self-organising tree core (scotbed.selforg): exact small cases computed by hand.

Path of three brokers i–k–j (p = 1 except p_k = 4; c_ik = 2, c_kj = 3): i's cache n0…n9, j's n0…n5,
k's n0, n1. So I_ij = 6, I_ik = 2, φ = (6 + 2 + 10 − 10)/2 = 4, I_ikj = min(4, 6, 2) = 2 and Eq. 5's
threshold is (6 − 2)/6 · (2 + 4) + 3 = 7. At c_ij = 7 Eq. 3 and Eq. 4 both give 66.

Six brokers on the path a–b–c–d–e–f, links 2 except c–d = 20 (pairs off the tree cost 10), p = 1.
a publishes n0…n9, b, e and f consume all of them, c and d nothing. Eq. 2 on the path:
10 · (6 brokers + 28 link cost) = 340.
- CI: a skips c and d (no common interest) and requests a–e: C_ae = 2 → 2+1+2 = 5 → 5+1+20 = 26 →
  factor 1 at e (I_ad = 0) → 26+1+2 = 29 > c_ae = 10. On R = a,b,c,d,e the summed Eq. 8 is 978 for
  keeping the tree (a: 10·2 + 10·29 = 310, b: 10·2 + 10·26 = 280, e: 10·26 + 10·12.8 = 388) and
  416 for cutting b–c, c–d or d–e (a 120, b 132, e 164; c and d share nothing, so they do not
  tell the three apart): the tie goes to the least name, b–c. Then 10 · (4 + 2+10+2) = 180; no
  further swap.
- ℓMST: a requests a–d (10 < 20, the dearest link on a,b,c,d) and drops c–d: 10 · (5 + 16) = 210.
- ℓMIT: a requests a–e (I_ae = 10 > 0 on b–c) and drops the least-interest link, b–c: 180.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from scotbed.selforg import evaluate as ev
from scotbed.selforg.agreement import ABORT, COMMIT, FORWARD, Lock, Request, step
from scotbed.selforg.costs import Costs, CostsError, delivery_tree, edge, total_cost
from scotbed.selforg.heuristics import HEURISTICS, View, heuristic
from scotbed.selforg.interest import BloomFilter, NotificationCache
from scotbed.selforg.records import Knobs
from scotbed.selforg.settle import exact_view, settle
from scotbed.selforg.tree import Tree

N = [f"n{n}" for n in range(10)]


def three() -> tuple[Tree, Costs, dict[str, set[str]]]:
    costs = Costs(links={("i", "k"): 2, ("j", "k"): 3}, brokers={"k": 4})
    return Tree.of([("i", "k"), ("k", "j")]), costs, {"i": set(N), "j": set(N[:6]), "k": set(N[:2])}


def test_eq5_threshold_on_three_brokers() -> None:
    tree, costs, caches = three()
    view = exact_view("i", tree, caches, eta=2)
    assert (view.own, dict(view.interest)) == (10, {"k": 2, "j": 6})
    phi = ev.phi(view.interest, view.own)
    assert phi == 4
    assert ev.triple(phi, 6, 2) == 2
    assert ev.threshold(6, 2, 2, 4, 3) == 7
    assert ev.indirect_cost(["i", "k", "j"], view.interest, phi, costs) == 7
    assert ev.cost_current(2, 6, 2, (1, 4, 1), 2, 3) == 66 == ev.cost_direct(2, 6, 2, (1, 4, 1), 2, 7)
    ci = heuristic("ci")
    for c_ij, outcome in [(6.99, "request"), (7, "skip")]:
        priced = Costs(links={**costs.links, ("i", "j"): c_ij}, brokers=costs.brokers)
        d = ci.evaluate(["i", "k", "j"], view, priced, Knobs())
        assert (d.outcome, d.inputs["C_ij"], d.inputs["phi"], d.inputs["I_ij"]) == (outcome, 7, 4, 6)
    half = Costs(links={**costs.links, ("i", "j"): 6}, brokers=costs.brokers)
    assert ci.evaluate(["i", "k", "j"], view, half, Knobs(hysteresis=0.2)).outcome == "skip"


def test_no_common_interest_and_missing_estimate_skip() -> None:
    _, costs, _ = three()
    ci = heuristic("ci")
    assert (
        ci.evaluate(["i", "k", "j"], View(10, {"k": 2, "j": 0}, {}), costs, Knobs()).reason
        == "no common interest"
    )
    assert (
        ci.evaluate(["i", "k", "j"], View(10, {"j": 6}, {}), costs, Knobs()).reason == "no estimate for k yet"
    )


def six() -> tuple[Tree, Costs, dict[str, set[str]], list[tuple[str, list[str]]]]:
    tree = Tree.of([("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f")])
    costs = Costs(links={("a", "b"): 2, ("b", "c"): 2, ("c", "d"): 20, ("d", "e"): 2, ("e", "f"): 2})
    caches = {"a": set(N), "b": set(N), "e": set(N), "f": set(N)}
    return tree, costs, caches, [("a", ["b", "e", "f"]) for _ in N]


def test_ci_makes_one_reconfiguration_on_six_brokers() -> None:
    tree, costs, caches, notes = six()
    assert total_cost(tree.adjacency, costs, notes) == 340
    out = settle(tree, costs, caches, heuristic("ci"), eta=5)
    [swap] = out.swaps
    assert (swap.broker, swap.inputs["add"], swap.inputs["remove"]) == ("e", ("a", "e"), ("b", "c"))
    vector = swap.inputs["vector"]
    assert vector == pytest.approx(
        {("a", "e"): 978, ("b", "c"): 416, ("c", "d"): 416, ("d", "e"): 416, ("a", "b"): 1298}
    )
    assert out.tree.links == {("a", "b"), ("a", "e"), ("c", "d"), ("d", "e"), ("e", "f")}
    assert total_cost(out.tree.adjacency, costs, notes) == 180
    request = next(r for r in out.records if r.kind == "evaluate" and r.outcome == "request")
    assert (request.broker, request.inputs["path"], request.inputs["C_ij"]) == (
        "a",
        ["a", "b", "c", "d", "e"],
        29,
    )


def test_baselines_decide_by_their_rules_on_six_brokers() -> None:
    tree, costs, caches, notes = six()
    lmst = settle(tree, costs, caches, heuristic("lmst"), eta=5)
    assert [(s.inputs["add"], s.inputs["remove"]) for s in lmst.swaps] == [(("a", "d"), ("c", "d"))]
    first = next(r for r in lmst.records if r.outcome == "request")
    assert (first.inputs["c_ij"], first.inputs["max_path_cost"]) == (10, 20)
    assert total_cost(lmst.tree.adjacency, costs, notes) == 210
    lmit = settle(tree, costs, caches, heuristic("lmit"), eta=5)
    assert [(s.inputs["add"], s.inputs["remove"]) for s in lmit.swaps] == [(("a", "e"), ("b", "c"))]
    assert lmit.swaps[0].inputs["vector"] == {
        ("a", "b"): 10,
        ("b", "c"): 0,
        ("c", "d"): 0,
        ("d", "e"): 0,
        ("a", "e"): 10,
    }
    assert total_cost(lmit.tree.adjacency, costs, notes) == 180


def test_agreement_locks_and_aborts() -> None:
    lock_k = Lock("other")
    r = Request("s1", ("i", "k", "j"))
    assert step(r, Lock(), frozenset({"k"}), {}).action == FORWARD
    s = step(r, lock_k, frozenset({"i", "j"}), {})
    assert (s.action, s.reason) == (ABORT, "k is locked by other")
    stale = Request("s2", ("i", "k", "j"))
    lock_i = Lock()
    assert step(stale, lock_i, frozenset({"x"}), {}).action == ABORT
    lock_i.release("s2")
    assert lock_i.holder is None
    keep = Request("s3", ("i", "k", "j"), vector={("i", "j"): 1, ("i", "k"): 1, ("j", "k"): 1})
    keep.at = 2
    assert step(keep, Lock(), frozenset({"k"}), {}).action == ABORT  # tie with e_n keeps the tree
    go = Request("s4", ("i", "k", "j"), at=2, vector={("i", "j"): 2, ("i", "k"): 1, ("j", "k"): 3})
    s = step(go, Lock(), frozenset({"k"}), {})
    assert (s.action, s.remove) == (COMMIT, ("i", "k"))


def test_delivery_tree_and_swaps() -> None:
    tree, _, _, _ = six()
    nodes, edges = delivery_tree(tree.adjacency, {"b", "d"})
    assert (nodes, edges) == ({"b", "c", "d"}, {("b", "c"), ("c", "d")})
    assert delivery_tree(tree.adjacency, {"c"}) == ({"c"}, set())
    with pytest.raises(ValueError, match="not on the cycle"):
        tree.swapped(("a", "c"), ("d", "e"))
    assert tree.swapped(("a", "c"), ("a", "b")).is_spanning_tree()
    assert tree.within("c", 2) == {"c": 0, "b": 1, "d": 1, "a": 2, "e": 2}


def test_bloom_filter_is_stable_and_counts_common_ids() -> None:
    cache = NotificationCache(size=3)
    for n in N[:5]:
        cache.add(n)
    assert cache.ids() == ["n2", "n3", "n4"]
    bloom = cache.bloom()
    assert bloom.common(N) == 3
    assert "n9" not in bloom and "n4" in bloom
    other = NotificationCache(size=4)
    for n in ["n3", "n4", "n7", "n8", "n9"]:  # n3 is evicted again
        other.add(n)
    assert other.ids() == ["n4", "n7", "n8", "n9"]
    assert (other.common(bloom), cache.common(other.bloom())) == (1, 1)  # only n4 is in both
    assert other.bloom() == BloomFilter.of(["n9", "n8", "n7", "n4"])  # the filter of what is cached now
    timed = NotificationCache(size=8)
    for t, n in enumerate(N[:6]):
        timed.add(n, time=float(t))
    assert (timed.recent(), timed.recent(since=4.0)) == (6, 2)
    assert timed.bloom(since=4.0) == BloomFilter.of(["n4", "n5"])  # the last interval only
    assert timed.common(BloomFilter.of(N[:5]), since=3.0) == 2  # n3, n4


def test_bloom_filter_does_not_depend_on_the_hash_seed() -> None:
    code = (
        "from scotbed.selforg.interest import BloomFilter as B; print(B.of(['x', 'y'], 512, 5).value.hex())"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert runs == {BloomFilter.of(["x", "y"], 512, 5).value.hex() + "\n"}


def test_costs_from_spec_block() -> None:
    c = Costs.from_mapping({"default_link": 5, "links": [["b", "a", 2]], "brokers": {"a": 3}})
    assert (c.link("a", "b"), c.link("a", "c"), c.broker("a"), c.broker("z")) == (2, 5, 3, 1)
    for bad, msg in [
        ({"links": [["a", "a", 1]]}, r"links\[0\]"),
        ({"links": [["a", "b", -1]]}, r"links\[0\]: want a finite number"),
        ({"links": [["a", "b", 1], ["b", "a", 2]]}, "listed twice"),
        ({"brokers": {"a": "x"}}, "brokers.a"),
        ({"bogus": 1}, "unknown key"),
    ]:
        with pytest.raises(CostsError, match=msg):
            Costs.from_mapping(bad)
    assert edge("b", "a") == ("a", "b")
    assert sorted(HEURISTICS) == ["ci", "lmit", "lmst"]
