"""The paper's evaluation (§5) in the simulator: every heuristic, and the static tree, on one tree, one
cost table, one workload and one redraw schedule, summarised as a reproduction row compares them.

§5.1's run: the random tree stays (the static network) or a heuristic adapts it; all link costs are
redrawn at the first third of the run and all broker costs at the second (the paper's t_1 = 25,000
and t_2 = 50,000). Costs are Eq. 1 per message hop (c_uv + p_v), counted per bucket of publication
time as Fig. 4 counts them: the notifications' (the delivery cost) and the heuristic's own messages
(broadcasts, requests, NEWVER floods, END waves). :func:`summaries` is pure: deterministic in its
seed and parameters, so a row (``computed: selforg-paper``) can compute it and a repetition repeats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scotbed.selforg.heuristics import HEURISTICS
from scotbed.selforg.sim import NOTIFY, OVERHEAD, Outcome, Setup, Simulation
from scotbed.selforg.simload import Workload

STATIC = "static"
BROADCAST = "broadcast"
#: the messages that carry out a reconfiguration (Fig. 5's "cost for executing the reconfigurations")
RECONFIGURATION = tuple(k for k in OVERHEAD if k != BROADCAST)
#: the one-bucket windows around the redraws, as series ``{heuristic}-{window}`` in :func:`summaries`
WINDOWS = (
    "before-links-redraw",
    "after-links-redraw",
    "before-brokers-redraw",
    "after-brokers-redraw",
    "end",
)
#: the reconfiguration messages of a heuristic as a series of their own, ``{heuristic}-reconfiguration``
RECONFIGURING = "reconfiguration"


@dataclass(frozen=True)
class Evaluation:
    """§5's parameters, shared by every heuristic of one comparison: the cost exponent α (None: the
    simulator's default), the run's length and bucket in ticks, publications per tick per type,
    unsubscriptions per subscription per tick, and the network's brokers and notification types."""

    alpha: float | None
    duration: float
    rate: float
    unsubscribe_rate: float
    brokers: int = 100
    types: int = 50
    bucket: float = 1000.0


@dataclass(frozen=True)
class Run:
    """One heuristic's run (``heuristic`` None: the static tree) and the setup it ran."""

    setup: Setup
    outcome: Outcome


def setup(
    seed: int, heuristic: str | None, evaluation: Evaluation, eta: int = 4, redrawn: bool = True
) -> Setup:
    """§5's setup for one heuristic: links redrawn at a third of the duration, brokers at two thirds
    (§5.1's; none with ``redrawn`` False, as §5.2's run to 25,000 ticks, before §5.1's first)."""
    e = evaluation
    load = Workload(
        brokers=e.brokers,
        types=e.types,
        publish_rate=e.rate,
        unsubscribe_rate=e.unsubscribe_rate,
        alpha=e.alpha,
    )
    redraws = ((e.duration / 3, "links"), (2 * e.duration / 3, "brokers")) if redrawn else ()
    return Setup(
        load=load,
        heuristic=heuristic,
        eta=eta,
        duration=e.duration,
        bucket=e.bucket,
        redraws=redraws,
        seed=seed,
    )


def runs(
    seed: int, heuristics: tuple[str | None, ...], evaluation: Evaluation, eta: int = 4, redrawn: bool = True
) -> dict[str, Run]:
    """Each heuristic (None: the static tree) by name, on the tree, costs, workload and redraws that
    ``seed`` draws (the simulator draws them from separate streams, the same for every heuristic)."""
    out = {}
    for name in heuristics:
        s = setup(seed, name, evaluation, eta, redrawn)
        out[name or STATIC] = Run(s, Simulation(s).run())
    return out


def per_notification(out: Outcome, kinds: tuple[str, ...], buckets: range | None = None) -> float:
    """The cost of the messages of ``kinds`` per notification published, over ``buckets`` (None: the
    whole run, the heuristic's messages after the last publication included)."""
    chosen = out.published.keys() if buckets is None else buckets
    published = sum(out.published.get(b, 0) for b in chosen)
    cost = sum(c for k in kinds for b, c in out.cost[k].items() if buckets is None or b in buckets)
    return cost / published if published else 0.0


def window_buckets(s: Setup) -> dict[str, int]:
    """Each window's bucket: the last one before a redraw, the first one from it, the run's last."""
    links, brokers = (int(when // s.bucket) for when, _ in s.redraws)
    last = int(s.duration // s.bucket) - 1
    return dict(zip(WINDOWS, (links - 1, links, brokers - 1, brokers, last), strict=True))


def costs(out: Outcome, buckets: range | None = None) -> dict[str, float]:
    """Per notification: Eq. 2's delivery cost, with the heuristic's own messages (Fig. 4's count),
    and those messages alone, split into broadcasts and reconfigurations."""
    everything = (NOTIFY, *OVERHEAD)
    return {
        "cost_per_notification": per_notification(out, (NOTIFY,), buckets),
        "cost_with_overhead_per_notification": per_notification(out, everything, buckets),
        "overhead_per_notification": per_notification(out, OVERHEAD, buckets),
        "broadcast_per_notification": per_notification(out, (BROADCAST,), buckets),
        "reconfiguration_per_notification": per_notification(out, RECONFIGURATION, buckets),
    }


def summaries(
    seed: int,
    alpha: float | None,
    duration: float,
    rate: float,
    unsubscribe_rate: float,
    eta: int = 4,
    brokers: int = 100,
    types: int = 50,
    bucket: float = 1000.0,
) -> dict[str, dict[str, Any]]:
    """The static tree and every heuristic as series (``selforg.*``, per notification over the run, and
    ``selforg.swaps``); per heuristic also ``{name}-{window}`` (:data:`WINDOWS`: the same figures over
    that one bucket) and ``{name}-reconfiguration``, whose ``selforg.cost_per_notification`` is the
    cost of its reconfiguration messages, so an effect can set it against the adapted network's."""
    evaluation = Evaluation(alpha, duration, rate, unsubscribe_rate, brokers, types, bucket)
    out: dict[str, dict[str, Any]] = {}
    for name, run in runs(seed, (None, *HEURISTICS), evaluation, eta).items():
        out |= series(name, run.outcome)
        for window, b in window_buckets(run.setup).items():
            out[f"{name}-{window}"] = {"selforg": costs(run.outcome, range(b, b + 1))}
    return out


def series(name: str, out: Outcome) -> dict[str, dict[str, Any]]:
    """A run's :func:`costs` over the whole run and its swaps as series ``name``, and the cost of its
    reconfiguration messages as ``{name}-reconfiguration``'s ``selforg.cost_per_notification``."""
    whole = costs(out)
    return {
        name: {"selforg": whole | {"swaps": len(out.swaps)}},
        f"{name}-{RECONFIGURING}": {
            "selforg": {"cost_per_notification": whole["reconfiguration_per_notification"]}
        },
    }


def eta_summaries(
    seed: int,
    etas: list[int],
    alpha: float | None,
    duration: float,
    rate: float,
    unsubscribe_rate: float,
    brokers: int = 100,
    types: int = 50,
    bucket: float = 1000.0,
) -> dict[str, dict[str, Any]]:
    """§5.2's experiment (Fig. 5): the static tree and CI with each neighbourhood size η in ``etas``,
    on one tree, cost table and workload with no redraw, as series ``static`` and ``ci-eta-{η}`` (and
    ``ci-eta-{η}-reconfiguration``, as :func:`series`)."""
    evaluation = Evaluation(alpha, duration, rate, unsubscribe_rate, brokers, types, bucket)
    out = series(STATIC, runs(seed, (None,), evaluation, redrawn=False)[STATIC].outcome)
    for eta in etas:
        out |= series(f"ci-eta-{eta}", runs(seed, ("ci",), evaluation, eta, redrawn=False)["ci"].outcome)
    return out
