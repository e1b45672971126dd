"""Selective pruning's known answer (experiments/known-answer/selective-path5.*): exact messages per
script line and directed link for covering-active, covering-packing and selective-pruning, derived by
hand below, on the simulator (fast) and on real broker processes (slow).

Path v0 — v1 — v2 — v3 — v4, publisher host broker v4. R = [0,100] at v0 covers B = [10,20] and
C = [30,40] at v1. Lines 4-13 of selective-path5.jsonl.

All three: R floods the path (4); B and C go v1→v0 only (towards v2 R covers them: held at v1).
p1 (R, B) and p2 (R, C) from v4 follow R to v0 (4 links each). Headers (distance, count): v3 and v2
match R only (k = 1: distance 1, 2); v1 matches R and B (or C), k = 2: (0, 1); v0 matches R (B's
entry there points back to v1, the sender): (1, 1). So R's window at v0 is distance 1, 1: D = 1.
unsub R: covering-active sends the unsubscription down the path (4) and v1, v2, v3 release B and C
  towards v4 (6): 10; packing packs them into the 4 unsubscriptions: 4; selective pruning sends
  [(v4, 1)] v0→v1 only (1); at v1 the list becomes empty: R stays forwarded to v2 as a ghost and
  v2, v3, v4 keep R's tree.
p3 (B) crosses v4→v1 under every algorithm (3); p4 (nobody) crosses nothing after a full prune and
  v4→v1 (3 false-positive copies) under selective pruning, where R's tree was kept.
unsub B, C: covering-active and packing follow where B and C went: v1→v0 and v1→v4 (4 each). Under
  selective pruning B's window at v1 is p1 (0, 1) and p3 (3, 0): D = 3 towards v4; C's is p2 (0, 1):
  D = 0. Both were forwarded to v0 only, where no publisher lies: no message, ghosts at v1 towards v0.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from test_known_answer import Links, chain, check, msg, play, scenario, simulate

from scotbed.broker.eventlog import read_events
from scotbed.broker.sim import SimNetwork
from scotbed.routing.selective_pruning import SelectivePruning

NAME = "selective-path5"
_COMMON: dict[int, Links] = {
    4: chain("sub", "v0 v1 v2 v3 v4"),
    5: msg("sub", "v1>v0"),
    6: msg("sub", "v1>v0"),
    7: chain("notif", "v4 v3 v2 v1 v0"),
    8: chain("notif", "v4 v3 v2 v1 v0"),
    10: chain("notif", "v4 v3 v2 v1"),
}
_RELEASED = msg("sub", "v1>v2", "v1>v2", "v2>v3", "v2>v3", "v3>v4", "v3>v4")
_B_OR_C_GONE = msg("unsub", "v1>v0", "v1>v2", "v2>v3", "v3>v4")
EXPECTED: dict[str, dict[int, Links]] = {
    "covering-active": {
        **_COMMON,
        9: chain("unsub", "v0 v1 v2 v3 v4") + _RELEASED,
        12: _B_OR_C_GONE,
        13: _B_OR_C_GONE,
    },
    "covering-packing": {**_COMMON, 9: chain("unsub", "v0 v1 v2 v3 v4"), 12: _B_OR_C_GONE, 13: _B_OR_C_GONE},
    "selective-pruning": {**_COMMON, 9: msg("unsub", "v0>v1"), 11: chain("notif", "v4 v3 v2 v1")},
}
DELIVERIES = {("p1", "R"), ("p1", "B"), ("p2", "R"), ("p2", "C"), ("p3", "B")}
#: the ``packed`` field the senders log (sender, link): packing's unsubscriptions of R carry B and C
PACKED = {"covering-packing": {("b-v1-0", "b-v2-0"): 2, ("b-v2-0", "b-v3-0"): 2, ("b-v3-0", "b-v4-0"): 2}}


@pytest.mark.parametrize("routing", sorted(EXPECTED))
def test_the_simulator_gives_the_hand_derived_counts(routing: str) -> None:
    scot, script = scenario(NAME)
    got, delivered = simulate(scot, script, routing)
    check(scot, got, EXPECTED[routing])
    assert delivered == DELIVERIES


def test_the_pruned_tree_ends_at_the_critical_broker_with_a_ghost() -> None:
    """After unsub R: v0 and v1 dropped R; v1 keeps it forwarded to v2 (ghost); v2..v4 keep R's tree."""
    scot, script = scenario(NAME)
    net = SimNetwork(scot, "selective-pruning")
    unsub_r = next(op for op in script.ops if op.op == "unsubscribe")
    for op in script.ops[: script.ops.index(unsub_r) + 1]:
        if op.op == "subscribe":
            assert op.filter is not None
            net.subscribe(op.sub_id, op.broker, op.filter)
        elif op.op == "publish":
            net.publish(op.pub_id, op.broker, op.attrs)
        else:
            net.unsubscribe(op.sub_id)
    (unsub,) = [s.msg for s in net.sent if s.kind == "unsubscription"]
    assert unsub.prune == (("b-v4-0", 0),)  # type: ignore[union-attr]
    has_r = {b: "R" in a.table for b, a in net.brokers.items()}
    assert has_r == {"b-v0-0": False, "b-v1-0": False, "b-v2-0": True, "b-v3-0": True, "b-v4-0": True}
    ghosts = {b: a.ghosts() for b, a in net.brokers.items() if isinstance(a, SelectivePruning)}
    assert ghosts == {"b-v0-0": 0, "b-v1-0": 1, "b-v2-0": 0, "b-v3-0": 0, "b-v4-0": 0}


@pytest.mark.slow
@pytest.mark.parametrize("routing", sorted(EXPECTED))
def test_real_brokers_send_exactly_the_known_answer(routing: str, tmp_path: Path) -> None:
    scot, script = scenario(NAME)
    got, receives = play(scot, script, routing, tmp_path)
    check(scot, got, EXPECTED[routing])
    assert receives == Counter(DELIVERIES)
    events = [e for f in sorted((tmp_path / "events").glob("b-*.jsonl")) for e in read_events(f)]
    assert {(e["node"], e["link"]): e["packed"] for e in events if "packed" in e} == PACKED.get(routing, {})
