"""Known-answer experiments (experiments/known-answer/): exact message counts per script line and per
directed link, derived by hand below, checked on the in-process simulator (fast) and on real broker
processes (slow), for flooding, rpf, covering-active, covering-packing, bid and snr.

Notation: brokers are written short (``v3`` = ``b-v3-0`` on the trees, ``c1`` = ``b-c-1`` on the SCOT);
``chain("sub", "v0 v1 v2")`` is one subscription message on each link v0→v1, v1→v2; ``msg("unsub",
"v1>v0", "v1>v2")`` lists links. A line absent from an expectation sends nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path

import pytest

from scotbed import contract
from scotbed.analysis.links import messages, per_operation, read_ops
from scotbed.broker.eventlog import read_events
from scotbed.broker.launcher import LocalCluster
from scotbed.broker.sim import SimNetwork
from scotbed.experiment.spec import build_scot, load_spec
from scotbed.orchestrator.backends.docker_engine import DockerEngine
from scotbed.orchestrator.scripted import load_script
from scotbed.topology import Scot
from scotbed.workloads.script import Script

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "experiments" / "known-answer"
FAST_LOG = {"sample_interval_ms": 200.0, "flush_interval_ms": 100.0}
Links = Counter[tuple[str, str, str]]  # (kind, from, to) -> messages
FLOOD = "flood "  # FLOOD + kind: every link carries 1 or 2 messages of the kind, 2e - n + 1 in all
ROUTE = "route"  # notification copies only, no directed link crossed twice (a timing-dependent route)


def _id(short: str) -> str:
    """``v3`` -> ``b-v3-0`` (trees), ``c1`` -> ``b-c-1`` (the SCOT's vertex letter + cluster)."""
    return f"b-{short}-0" if short.startswith("v") else f"b-{short[0]}-{short[1:]}"


def chain(kind: str, brokers: str) -> Links:
    b = brokers.split()
    return Counter((kind, _id(x), _id(y)) for x, y in pairwise(b))


def msg(kind: str, *links: str) -> Links:
    return Counter((kind, _id(a), _id(b)) for a, b in (link.split(">") for link in links))


# --- path5: b-v0-0 — b-v1-0 — b-v2-0 — b-v3-0 — b-v4-0; A = [0,100] at v0, B = [10,20] and
# C = [30,40] at v1 (both covered by A). Lines 4-13 of path5.jsonl.
#
# flooding: subscriptions stay home; a publication crosses all n - 1 = 4 links, away from its broker.
# rpf: a (un)subscription floods the tree (4 messages); a publication follows the reverse paths of the
#   matching entries: p1 (A, B) and p2 (A) go v4→v0 (4 links), p3 matches nothing (0), p4 (C) v4→v1.
# bid: on a tree the same as rpf (flood = n - 1, the BID list splits along the unique path).
# covering-active: B and C reach v1's neighbour v2 only as covered by A (held there); they go only
#   to v0 (A came from v0, so nothing of v0's covers them): 1 message each. unsub A: v0→v1 carries
#   the unsubscription; v1 releases B and C towards v2 (sent before the unsubscription, 3 messages);
#   v2 had held both under A again, and so did v3: 3 messages on v1→v2, v2→v3, v3→v4 each: 10.
# covering-packing: the same, but the released B and C travel inside the one unsubscription: 4.
_P5_PUBS = {7: chain("notif", "v4 v3 v2 v1 v0"), 8: chain("notif", "v4 v3 v2 v1 v0")}
_P5_FLOODING = {
    **_P5_PUBS,
    9: msg("notif", "v2>v1", "v1>v0", "v2>v3", "v3>v4"),
    11: chain("notif", "v4 v3 v2 v1 v0"),
}
_P5_RPF = {
    4: chain("sub", "v0 v1 v2 v3 v4"),
    5: msg("sub", "v1>v0", "v1>v2", "v2>v3", "v3>v4"),
    6: msg("sub", "v1>v0", "v1>v2", "v2>v3", "v3>v4"),
    **_P5_PUBS,
    10: chain("unsub", "v0 v1 v2 v3 v4"),
    11: chain("notif", "v4 v3 v2 v1"),
    12: msg("unsub", "v1>v0", "v1>v2", "v2>v3", "v3>v4"),
    13: msg("unsub", "v1>v0", "v1>v2", "v2>v3", "v3>v4"),
}
_P5_ACTIVE = {
    **_P5_RPF,
    5: msg("sub", "v1>v0"),
    6: msg("sub", "v1>v0"),
    10: chain("unsub", "v0 v1 v2 v3 v4") + chain("sub", "v1 v2 v3 v4") + chain("sub", "v1 v2 v3 v4"),
}
_P5_PACKING = {**_P5_ACTIVE, 10: chain("unsub", "v0 v1 v2 v3 v4")}

# --- tree7: kary 2-2, root v0, v1 (v3, v4) and v2 (v5, v6). R = [0,100] at v3 covers C1 = [10,20]
# at v4 and C2 = [30,40] at v5. Lines 4-11 of tree7.jsonl.
#
# rpf: every (un)subscription floods the 6 links; p1 (R, C1) from v6: v6→v2→v0→v1, then v1→v3 and
#   v1→v4 (5); p2 (C2): v6→v2→v5 (2).
# covering-active: C1 goes v4→v1 and on to v3 (R came from v3), held towards v0 under R: 2.
#   C2 goes v5→v2→v0→v1→v3 (C1 on v1→v3 does not cover it), held towards v6 (at v2) and v4 (at v1): 4.
#   unsub R: v3→v1 the unsubscription; v1 releases C1 to v0 and C2 to v4 (sub + unsub each); v0 held
#   C1 under R again and releases it to v2 (2); v2 held C1 towards v5 (2) and C1, C2 towards v6 (3): 12.
#   The later unsubscriptions follow where C1 and C2 went: the whole tree, 6 each.
# covering-packing: unsub R is one message per link, the released subscriptions packed inside: 6.
_T7_RPF = {
    4: msg("sub", "v3>v1", "v1>v0", "v1>v4", "v0>v2", "v2>v5", "v2>v6"),
    5: msg("sub", "v4>v1", "v1>v3", "v1>v0", "v0>v2", "v2>v5", "v2>v6"),
    6: msg("sub", "v5>v2", "v2>v0", "v2>v6", "v0>v1", "v1>v3", "v1>v4"),
    7: msg("notif", "v6>v2", "v2>v0", "v0>v1", "v1>v3", "v1>v4"),
    8: msg("unsub", "v3>v1", "v1>v0", "v1>v4", "v0>v2", "v2>v5", "v2>v6"),
    9: msg("notif", "v6>v2", "v2>v5"),
    10: msg("unsub", "v4>v1", "v1>v3", "v1>v0", "v0>v2", "v2>v5", "v2>v6"),
    11: msg("unsub", "v5>v2", "v2>v0", "v2>v6", "v0>v1", "v1>v3", "v1>v4"),
}
_T7_PACKING = {
    **_T7_RPF,
    5: msg("sub", "v4>v1", "v1>v3"),
    6: msg("sub", "v5>v2", "v2>v0", "v0>v1", "v1>v3"),
}
_T7_ACTIVE = {
    **_T7_PACKING,
    8: _T7_RPF[8] + msg("sub", "v1>v0", "v1>v4", "v0>v2", "v2>v5", "v2>v6", "v2>v6"),
}

# --- fig2k2: paper-fig2 × K2, clusters 0 and 1 are paths a-b-c-d-e-f, iCOLs x0—x1. S1 = [0,10] at a0,
# S2 = [5,20] at c1. Lines 4-10 of fig2k2.jsonl. n = 12 brokers, e = 10 aCOLs + 6 iCOLs = 16 links.
#
# snr: a subscription floods its cluster's tree (5 aCOL messages) and every broker of its cluster
#   sends it over its iCOL (6): 11; the unsubscription retraces them. p1 at c0 matches S1 (PRIMARY,
#   towards b0) and S2 (SECONDARY, stored from the iCOL c1→c0): c0→b0→a0 and c0→c1 (3); p2 and p4
#   (S2 only) cross c0→c1; p3 at f1 matches nothing.
# flooding: a publication costs 2e - n + 1 = 21 messages on any overlay (each broker forwards its
#   first copy to every other neighbour); which direction a link is used in depends on which copy
#   arrives first, so per link the count is 1 or 2 (never 0: see _check_flood).
# bid: (un)subscriptions flood the same way (21, 1 or 2 per link). A notification follows, per BID,
#   the route the *first* copy of a subscription of that broker took to each broker. In the
#   simulator's global FIFO the shortest route wins: S1 reaches c0 over b0 (2 hops; every other route
#   has >= 4), S2 over its iCOL (1 hop; others >= 3), so the notifications go as with snr. Between
#   real processes a longer route can win the race (seen: S1 reaching b0 over a1, b1 first), so there
#   the notification lines are checked as loop-free routes (ROUTE) and the deliveries exactly.
_K2_SNR_S1 = chain("sub", "a0 b0 c0 d0 e0 f0") + msg("sub", *(f"{x}0>{x}1" for x in "abcdef"))
_K2_SNR = {
    4: _K2_SNR_S1,
    5: msg("sub", "c1>b1", "b1>a1", "c1>d1", "d1>e1", "e1>f1", *(f"{x}1>{x}0" for x in "abcdef")),
    6: msg("notif", "c0>b0", "b0>a0", "c0>c1"),
    7: msg("notif", "c0>c1"),
    9: Counter({("unsub", a, b): n for (_, a, b), n in _K2_SNR_S1.items()}),
    10: msg("notif", "c0>c1"),
}
_K2_FLOODING = {6: FLOOD + "notif", 7: FLOOD + "notif", 8: FLOOD + "notif", 10: FLOOD + "notif"}
_K2_BID = {**_K2_SNR, 4: FLOOD + "sub", 5: FLOOD + "sub", 9: FLOOD + "unsub"}
_K2_BID_REAL = {**_K2_BID, 6: ROUTE, 7: ROUTE, 10: ROUTE}

EXPECTED: dict[tuple[str, str], Mapping[int, Links | str]] = {
    ("path5", "flooding"): _P5_FLOODING,
    ("path5", "rpf"): _P5_RPF,
    ("path5", "bid"): _P5_RPF,
    ("path5", "covering-active"): _P5_ACTIVE,
    ("path5", "covering-packing"): _P5_PACKING,
    ("tree7", "rpf"): _T7_RPF,
    ("tree7", "covering-active"): _T7_ACTIVE,
    ("tree7", "covering-packing"): _T7_PACKING,
    ("fig2k2", "snr"): _K2_SNR,
    ("fig2k2", "bid"): _K2_BID,
    ("fig2k2", "flooding"): _K2_FLOODING,
}
DELIVERIES = {
    "path5": {("p1", "A"), ("p1", "B"), ("p2", "A"), ("p4", "C")},
    "tree7": {("p1", "R"), ("p1", "C1"), ("p2", "C2")},
    "fig2k2": {("p1", "S1"), ("p1", "S2"), ("p2", "S2"), ("p4", "S2")},
}
#: the real-broker runs (a modest share of EXPECTED: every algorithm at least once)
REAL = [
    ("path5", "flooding"),
    ("path5", "rpf"),
    ("path5", "covering-active"),
    ("path5", "covering-packing"),
    ("path5", "bid"),
    ("tree7", "covering-active"),
    ("fig2k2", "snr"),
    ("fig2k2", "bid"),
]


def scenario(name: str) -> tuple[Scot, Script]:
    spec = load_spec(SCENARIOS / f"{name}.yaml")
    scot = build_scot(spec)
    return scot, load_script(spec, scot)


def simulate(scot: Scot, script: Script, routing: str) -> tuple[dict[int, Links], set[tuple[str, str]]]:
    """Per line, the messages the in-process simulator sends; and the deliveries."""
    kinds = {"subscription": "sub", "unsubscription": "unsub", "publication": "notif"}
    net = SimNetwork(scot, routing)
    filters = {op.sub_id: op.filter for op in script.ops if op.op == "subscribe"}
    out: dict[int, Links] = {}
    for op in script.ops:
        before = len(net.sent)
        if op.op == "subscribe":
            assert op.filter is not None
            net.subscribe(op.sub_id, op.broker, op.filter)
        elif op.op == "unsubscribe":
            net.unsubscribe(op.sub_id, filters[op.sub_id])
        elif op.op == "publish":
            net.publish(op.pub_id, op.broker, op.attrs)
        out[op.line] = Counter((kinds[s.kind], s.src, s.dst) for s in net.sent[before:])
    return out, set(net.deliveries)


def check(scot: Scot, got: Mapping[int, Links], expected: Mapping[int, Links | str]) -> None:
    for line in sorted(set(got) | set(expected)):
        want = expected.get(line, Counter())
        have = got.get(line, Counter())
        if want == ROUTE:
            assert {k for k, _, _ in have} == {"notif"} and set(have.values()) == {1}, f"line {line}: {have}"
        elif isinstance(want, str):
            _check_flood(scot, have, want.removeprefix(FLOOD), line)
        else:
            assert have == want, f"line {line}: got {sorted(have.items())}, expected {sorted(want.items())}"  # type: ignore[union-attr]


def _check_flood(scot: Scot, have: Links, kind: str, line: int) -> None:
    """A flood with duplicate suppression: every broker forwards its first copy to each neighbour
    but the one it came from. A link u—v is crossed once or twice, never zero times (u and v cannot
    each have heard first from the other), so the total is Σ deg − (n − 1) = 2e − n + 1."""
    assert {k for k, _, _ in have} == {kind}, f"line {line}: {sorted(have)}"
    edges = {frozenset((link.a, link.b)) for link in scot.links}
    per_edge = Counter(frozenset((a, b)) for _, a, b in have.elements())
    assert set(per_edge) == edges, f"line {line}: links not crossed: {edges - set(per_edge)}"
    assert set(per_edge.values()) <= {1, 2}, f"line {line}: {per_edge}"
    assert sum(have.values()) == 2 * len(edges) - len(scot.brokers) + 1, f"line {line}"


@pytest.mark.parametrize(("name", "routing"), sorted(EXPECTED))
def test_the_simulator_gives_the_hand_derived_counts(name: str, routing: str) -> None:
    scot, script = scenario(name)
    got, delivered = simulate(scot, script, routing)
    check(scot, got, EXPECTED[(name, routing)])
    assert delivered == DELIVERIES[name]


def counted(run_dir: Path) -> tuple[dict[int, Links], Counter[tuple[str, str]]]:
    """Per script line the messages the brokers logged (``events/b-*.jsonl``), and the subscribers'
    (pub_id, sub_id) receives."""
    events = [e for f in sorted((run_dir / "events").glob("b-*.jsonl")) for e in read_events(f)]
    ops = read_ops(run_dir / contract.SCRIPT_OPS)
    receives = Counter(
        (e["pub_id"], e["sub_id"])
        for e in read_events(run_dir / "events" / "script.jsonl")
        if e["ev"] == "receive"
    )
    return per_operation(messages(events), ops), receives


def play(
    scot: Scot, script: Script, routing: str, workdir: Path
) -> tuple[dict[int, Links], Counter[tuple[str, str]]]:
    """The script on real broker processes (their logs under ``workdir/events``)."""
    from scotbed.workloads.script_runner import ScriptSession

    cluster = LocalCluster.from_topology(
        scot, workdir, launcher={"stop_grace_s": 10.0}, routing=routing, matching="counting", log=FAST_LOG
    )
    session: ScriptSession | None = None
    try:
        with cluster:
            session = ScriptSession(script, cluster.addresses(), workdir, stable_s=0.2)
            session.run(timeout_s=300)
            cluster.flush_all()
    finally:
        if session is not None:
            session.close()  # after the brokers stopped: a stopping broker does not unsubscribe
    return counted(workdir)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "routing"), REAL)
def test_real_brokers_send_exactly_the_known_answer(name: str, routing: str, tmp_path: Path) -> None:
    scot, script = scenario(name)
    got, receives = play(scot, script, routing, tmp_path)
    check(scot, got, {**EXPECTED, ("fig2k2", "bid"): _K2_BID_REAL}[(name, routing)])
    assert receives == Counter(DELIVERIES[name])  # each expected delivery exactly once, nothing else


@pytest.mark.parametrize(("name", "routing"), sorted(EXPECTED))
def test_the_sim_backend_sends_exactly_the_known_answer(
    name: str, routing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`scotbed run --backend sim` of each scenario: the brokers' logs give the hand counts of every
    line and link, and the subscribers receive each expected delivery once, nothing else."""
    from scotbed.orchestrator.run import RunOptions, run_spec

    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    options = RunOptions(backend="sim", out=tmp_path / "runs", quiet=True, analyse=False)
    result = run_spec(SCENARIOS / f"{name}.yaml", [f"routing={routing}"], options)
    scot, _ = scenario(name)
    got, receives = counted(result.run_dir)
    check(scot, got, EXPECTED[(name, routing)])
    assert receives == Counter(DELIVERIES[name])


@pytest.mark.slow
@pytest.mark.spark
def test_a_scripted_run_end_to_end_reports_links_and_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`scotbed run` of path5 with covering-packing on the local backend: the oracle's verdict, the
    link tables and summary (hand counts: subscriptions 4 + 1 + 1, unsubscriptions 4 per line,
    publications crossing 4, 4, 0 and 3 links), the realised selectivity (A matches 3 of the 4
    publications, B and C one each: 5/12) and each publication's path in the report."""
    import pandas as pd

    from scotbed.orchestrator.run import RunOptions, run_spec

    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    result = run_spec(
        SCENARIOS / "path5.yaml", ["routing=covering-packing"], RunOptions(out=tmp_path / "runs", quiet=True)
    )
    assert result.ok, result.verdict
    s = result.summary
    assert s["notifications"]["published"] == 4 and s["notifications"]["delivered"] == 4
    assert s["links"] == {
        "per_publication": {"mean": 11 / 4, "max": 4},
        "subscription_messages": 6,
        "unsubscription_messages": 12,
        "subscription_messages_per_subscribe": 2.0,
        "unsubscription_messages_per_unsubscribe": 4.0,
    }
    assert s["workload"]["selectivity"] == {"target": None, "realised": pytest.approx(5 / 12)}
    analysis = result.run_dir / "analysis"
    subs = pd.read_parquet(analysis / "link_subscriptions.parquet")
    assert sorted(subs.loc[subs["sub_id"] == "A", "kind"]) == ["sub"] * 4 + ["unsub"] * 4
    notifs = pd.read_parquet(analysis / "link_notifications.parquet")
    p4 = notifs[notifs["pub_id"] == "p4"]
    assert sorted(zip(p4["from"], p4["to"], strict=True)) == [
        ("b-v2-0", "b-v1-0"), ("b-v3-0", "b-v2-0"), ("b-v4-0", "b-v3-0"),
    ]  # fmt: skip
    report = (result.run_dir / "report.html").read_text()
    assert "Path of each publication" in report
    assert "b-v4-0→b-v3-0, b-v3-0→b-v2-0, b-v2-0→b-v1-0" in report  # p4


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_script_on_compose_sends_the_same_messages(
    tmp_path: Path, engine: DockerEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host-side driver reaches the containers over their published ports: path5 with rpf on
    the compose backend gives the hand counts of every line and link, and every delivery once."""
    from scotbed.orchestrator.backends.compose import BASE_IMAGE_OFFLINE
    from scotbed.orchestrator.run import RunOptions, run_spec

    if not engine.image_exists("scotbed-broker:0.1.0") and not engine.image_exists(BASE_IMAGE_OFFLINE):
        pytest.skip("no broker image and no offline base image: run `make image OFFLINE=1`")
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    options = RunOptions(backend="compose", analyse=False, quiet=True, out=tmp_path / "runs")
    result = run_spec(SCENARIOS / "path5.yaml", ["routing=rpf"], options)
    got, receives = counted(result.run_dir)
    check(scenario("path5")[0], got, EXPECTED[("path5", "rpf")])
    assert receives == Counter(DELIVERIES["path5"])
