"""The unsubscription-burst scenario of the selective-pruning paper (§V) as a script (docs/design.md §8).

A script rather than the generated workload, because the paper's controls are exact placements
and timings: subscribers only on the subscriber edges ``s<k>`` of a tiered factor
(:func:`scotbed.topology.tiered`), publishers only on E's edges ``p<k>``; covering families
(a root and the children it covers); probe publications that every subscriber edge wants.

Phases, each line with ``"settle": false`` so the brokers see the real pacing:

1. every root (``x between [lo, lo + width - 1]``), its ``children`` (equal slices of the root's
   range but its top ``gap`` values: the root's publications its children miss) and one
   probe monitor (``probe exists``) per subscriber edge; ``clustered`` places a family on one
   edge (§V-E's clustered workload), otherwise the children are spread round-robin over all
   subscriber edges; ``random_placement`` places every root and child on a subscriber edge drawn
   uniformly at random (seeded by ``seed``), §V-A's "subscribers are randomly distributed among the
   remaining edge brokers";
2. ``history`` publications from the publisher edges, uniform over the roots' ranges (the
   subscriber host brokers' publication history), one every ``history_interval_ms``; then a settle;
3. the burst: ``burst`` roots unsubscribed ``burst_interval_ms`` apart, while ``probes`` probe
   publications (``probe = k``, ``x = -1``: no root or child matches) go out ``probe_interval_ms``
   apart from the first publisher edge and ``after`` more regular publications keep their pace
   (the traffic a kept tree may carry as false positives; each in the range of a root already
   unsubscribed or never unsubscribed, :func:`_after_x`); then the final settle.

Mobile monitors (the paper's §V-F): ``monitors`` match-all subscriptions (``x exists``, subscribed
in phase 1 on subscriber edges) move ``moves`` times each during phase 2, one move every
``move_interval_ms`` round-robin: unsubscribe at the old edge, subscribe under a fresh sub_id one
edge on. A moving monitor covers everything, so under covering each move releases what it covered,
and under selective pruning its old tree may stay as ghosts. Each move is settled (a settle
before it, the implicit ones after its lines): with slow core brokers a publication can be in
flight for seconds, and one issued before a move but delivered after it would count as a missing
or false-positive delivery for the monitor, though no routing went wrong.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scotbed import topology

#: the pub_id prefix of the probe publications (the analysis finds them by it)
PROBE_PREFIX = "probe"
#: the sub_id prefix of the mobile match-all monitors: ``all<k>-<move>`` (their own re-subscriptions
#: are no released subscriptions)
MONITOR_PREFIX = "all"


@dataclass(frozen=True)
class BurstScenario:
    factor: str = "paper-tiered-small"
    roots: int = 16
    width: int = 118
    children: int = 39
    gap: int = 1
    clustered: bool = True
    random_placement: bool = False
    history: int = 480
    history_interval_ms: float = 100.0
    after: int = 100
    burst: int = 8
    burst_interval_ms: float = 250.0
    probes: int = 40
    probe_interval_ms: float = 250.0
    monitors: int = 0
    moves: int = 0
    move_interval_ms: float = 3000.0
    seed: int = 7


def _between(lo: int, hi: int) -> list[dict[str, Any]]:
    return [{"attr": "x", "op": "between", "value": [lo, hi]}]


def _merge(*streams: tuple[list[list[dict[str, Any]]], float]) -> Iterator[dict[str, Any]]:
    """Timed streams ``(steps, every_ms)`` interleaved by their schedules, with the sleeps between them;
    a step is one or more lines issued together."""
    timed = sorted((i * every, k, i, x) for k, (xs, every) in enumerate(streams) for i, x in enumerate(xs))
    now = 0.0
    for t, _, _, step in timed:
        if t > now:
            yield {"op": "sleep", "ms": round(t - now, 3)}
            now = t
        yield from step


def _after_x(sc: BurstScenario, rng: random.Random, i: int) -> int:
    """The value of the burst's ``i``-th regular publication: uniform over the roots already
    unsubscribed when it goes out or never unsubscribed. A publication that a root still to be
    unsubscribed matches could still be in flight, queued at a slow core broker, when the root
    leaves, and would count as a missing delivery though no routing went wrong."""
    t = i * sc.history_interval_ms
    roots = [r for r in range(sc.roots) if r >= sc.burst or r * sc.burst_interval_ms <= t]
    return rng.choice(roots) * sc.width + rng.randrange(sc.width)


def monitor_id(k: int, move: int) -> str:
    return f"{MONITOR_PREFIX}{k}-{move}"


def _moves(sc: BurstScenario, edges: list[str]) -> list[list[dict[str, Any]]]:
    """Each move of a match-all monitor: a settle, its unsubscription, its fresh subscription one edge on."""
    match_all = [{"attr": "x", "op": "exists"}]
    steps: list[list[dict[str, Any]]] = []
    for move in range(sc.moves):
        for k in range(sc.monitors):
            to = edges[(k + move + 1) % len(edges)]
            new: dict[str, Any] = {
                "op": "subscribe",
                "sub_id": monitor_id(k, move + 1),
                "broker": to,
                "filter": match_all,
            }
            steps.append([{"op": "settle"}, {"op": "unsubscribe", "sub_id": monitor_id(k, move)}, new])
    return steps


def _placements(sc: BurstScenario, edges: list[str]) -> Iterator[tuple[str, list[str]]]:
    """Each family's root edge and its children's edges: clustered (all on the root's), round-robin, or
    uniformly at random. The random draws have a generator of their own, so that the publications'
    values are the same under every placement."""
    placer = random.Random(f"placement-{sc.seed}")
    for r in range(sc.roots):
        if sc.random_placement:
            home = placer.choice(edges)
            kids = [home if sc.clustered else placer.choice(edges) for _ in range(sc.children)]
        else:
            home = edges[r % len(edges)]
            kids = [home if sc.clustered else edges[(r + c + 1) % len(edges)] for c in range(sc.children)]
        yield home, kids


def script(sc: BurstScenario) -> list[dict[str, Any]]:
    """The scenario's script lines, in order."""
    factor = topology.NAMED_FACTORS[sc.factor]()
    edges = [topology.broker_id(v, 0) for v in factor.vertices if v.startswith("s")]
    pubs = [topology.broker_id(v, 0) for v in factor.vertices if v.startswith("p")]
    rng = random.Random(sc.seed)
    lines: list[dict[str, Any]] = []
    quiet = {"settle": False}
    slice_ = (sc.width - sc.gap) // sc.children
    for r, (home, kids) in enumerate(_placements(sc, edges)):
        lo = r * sc.width
        lines.append(
            {
                "op": "subscribe",
                "sub_id": f"r{r}",
                "broker": home,
                "filter": _between(lo, lo + sc.width - 1),
                **quiet,
            }
        )
        for c, broker in enumerate(kids):
            a = lo + c * slice_
            flt = _between(a, a + slice_ - 1)
            lines.append({"op": "subscribe", "sub_id": f"r{r}c{c}", "broker": broker, "filter": flt, **quiet})
    for k in range(sc.monitors):
        flt = [{"attr": "x", "op": "exists"}]
        lines.append(
            {
                "op": "subscribe",
                "sub_id": monitor_id(k, 0),
                "broker": edges[k % len(edges)],
                "filter": flt,
                **quiet,
            }
        )
    for k, e in enumerate(edges):
        lines.append(
            {
                "op": "subscribe",
                "sub_id": f"m{k}",
                "broker": e,
                "filter": [{"attr": "probe", "op": "exists"}],
                **quiet,
            }
        )
    lines.append({"op": "settle"})
    xs = [rng.randrange(sc.roots * sc.width) for _ in range(sc.history)]
    xs += [_after_x(sc, rng, i) for i in range(sc.after)]
    regular = [
        {"op": "publish", "pub_id": f"h{i}", "broker": pubs[i % len(pubs)], "attrs": {"x": x}, **quiet}
        for i, x in enumerate(xs)
    ]
    lines.extend(
        _merge(
            ([[x] for x in regular[: sc.history]], sc.history_interval_ms),
            (_moves(sc, edges), sc.move_interval_ms),
        )
    )
    lines.append({"op": "settle"})
    unsubs = [{"op": "unsubscribe", "sub_id": f"r{r}", **quiet} for r in range(sc.burst)]
    probes = [
        {
            "op": "publish",
            "pub_id": f"{PROBE_PREFIX}{i}",
            "broker": pubs[0],
            "attrs": {"probe": i, "x": -1},
            **quiet,
        }
        for i in range(sc.probes)
    ]
    lines.extend(
        _merge(
            ([[x] for x in unsubs], sc.burst_interval_ms),
            ([[x] for x in probes], sc.probe_interval_ms),
            ([[x] for x in regular[sc.history :]], sc.history_interval_ms),
        )
    )
    lines.append({"op": "settle"})
    return lines


def main(argv: list[str] | None = None) -> None:
    """``python -m scotbed.workloads.pruning_burst OUT.jsonl [--key value]...``: write the script."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    defaults = BurstScenario()
    for name, value in vars(defaults).items():
        kind = (lambda s: s.lower() in ("1", "true", "yes")) if isinstance(value, bool) else type(value)
        p.add_argument(f"--{name.replace('_', '-')}", type=kind, default=value)
    args = vars(p.parse_args(argv))
    out = args.pop("out")
    sc = BurstScenario(**args)
    head = f"# generated: python -m scotbed.workloads.pruning_burst {out.name} ({sc})\n"
    out.write_text(head + "".join(json.dumps(x) + "\n" for x in script(sc)))


if __name__ == "__main__":
    main()
