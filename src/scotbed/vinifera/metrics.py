"""The paper's metrics as the readings define them, computed from per-event records.

overhead: share of event messages received by uninterested peers; path length: hops publisher →
subscriber; load of a peer: share of events it received without interest (CDF, idle share);
hit ratio: deliveries to interested peers over interested peers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

#: the load values at which a summary reports the CDF (share of peers at or below)
CDF_POINTS = (0.0, 0.1, 0.2, 0.3, 0.6, 1.0)


@dataclass
class EventRecord:
    """What happened to one published event; ``interested`` is the oracle at publication."""

    eid: int
    publisher: int
    round: int
    interested: frozenset[int]
    received: dict[int, int] = field(default_factory=dict)
    deliveries: dict[int, int] = field(default_factory=dict)
    #: per subscriber, the hops from the RV (the depth in the delivery tree)
    tree_hops: dict[int, int] = field(default_factory=dict)
    extra_deliveries: int = 0
    dropped: int = 0


def overhead(records: Iterable[EventRecord]) -> float:
    total = wasted = 0
    for r in records:
        for peer, n in r.received.items():
            total += n
            wasted += n if peer not in r.interested else 0
    return wasted / total if total else 0.0


def path_length(records: Iterable[EventRecord]) -> float:
    hops = [h for r in records for h in r.deliveries.values()]
    return mean(hops) if hops else 0.0


def tree_depth(records: Iterable[EventRecord]) -> float:
    """Mean hops RV → subscriber: the delivery-tree part of the path length."""
    hops = [h for r in records for h in r.tree_hops.values()]
    return mean(hops) if hops else 0.0


def hit_ratio(records: Iterable[EventRecord]) -> float:
    want = got = 0
    for r in records:
        want += len(r.interested)
        got += len(r.interested & r.deliveries.keys())
    return got / want if want else 1.0


def hit_ratio_by_round(records: Iterable[EventRecord]) -> dict[int, float]:
    rounds: dict[int, list[EventRecord]] = {}
    for r in records:
        rounds.setdefault(r.round, []).append(r)
    return {k: hit_ratio(v) for k, v in sorted(rounds.items())}


def loads(records: Sequence[EventRecord], peers: Iterable[int]) -> dict[int, float]:
    """Per peer: the share of published events it received without interest."""
    count = dict.fromkeys(peers, 0)
    for r in records:
        for peer in r.received:
            if peer not in r.interested and peer in count:
                count[peer] += 1
    n = len(records)
    return {p: c / n if n else 0.0 for p, c in count.items()}


def load_cdf(values: Iterable[float], points: Sequence[float]) -> list[float]:
    """Share of peers with load ≤ each of ``points``."""
    v = sorted(values)
    return [sum(1 for x in v if x <= p) / len(v) if v else 0.0 for p in points]


def idle_share(values: Iterable[float]) -> float:
    v = list(values)
    return sum(1 for x in v if x == 0) / len(v) if v else 0.0


def summary(records: Sequence[EventRecord], peers: Iterable[int]) -> dict[str, Any]:
    """The ``peers`` block of summary.json from per-event records: the keys and definitions of the
    processes' Spark analysis (:mod:`scotbed.vinifera.analysis.section`), so a simulated run and a run
    of processes give one summary. ``peers``: every peer of the run, failed ones too (the load's
    denominator is the peers that took part, as the processes' logs name them)."""
    ld = loads(records, peers)
    want = sum(len(r.interested) for r in records)
    got = sum(len(r.interested & r.deliveries.keys()) for r in records)
    return {
        "events": len(records),
        "hit_ratio": hit_ratio(records),
        "hit_ratio_by_round": hit_ratio_by_round(records),
        "missed": want - got,
        "extra_deliveries": sum(r.extra_deliveries for r in records),
        "dropped": sum(r.dropped for r in records),
        "overhead": overhead(records),
        "path_length": float(path_length(records)),
        "tree_depth": float(tree_depth(records)),
        "idle_share": idle_share(ld.values()),
        "max_load": max(ld.values(), default=0.0),
        "load_cdf": dict(zip(CDF_POINTS, load_cdf(ld.values(), CDF_POINTS), strict=True)),
    }
