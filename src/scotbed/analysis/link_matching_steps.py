"""Matching steps of link matching vs one centralised PST, by hop count (the Gryphon slides' "Matching
Time Results": "A matching step is a visitation of a single node in the matching tree").

On a path of brokers (the publisher's broker first, so that the broker ``k`` links further is ``k`` hops
from it), Gryphon's workload (10 attributes x 3 values, the slides' schema; don't-care probability
calibrated to a matching fraction) is subscribed through the real ``link-matching`` plug-in in the
in-process simulator, the subscriptions spread evenly over the brokers. For every notification published
at the first broker, the cumulative steps (PST nodes visited) of the brokers from the publisher's to the
one ``k`` hops away are set against the steps of one PST holding every subscription (the centralised
baseline). Pure: deterministic in its seed, no processes, so a reproduction row can compute it.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scotbed import routing, topology
from scotbed.broker.sim import SimNetwork
from scotbed.matching.pst import PstMatcher
from scotbed.messages import Publication
from scotbed.workloads import gryphon as g

SCHEMA = g.GryphonSchema(attributes=10, values=3)
CENTRALISED = "centralised"


@dataclass(frozen=True)
class StepsByHops:
    """Mean matching steps per notification: the centralised PST's, and link matching's cumulative
    steps by the hop count of the broker reached (0: the publisher's broker alone)."""

    centralised: float
    link_matching: dict[int, float]


def cumulative_steps(net: SimNetwork, source: str, attrs: Mapping[str, Any]) -> dict[int, int]:
    """Hop count -> cumulative link-matching steps of the brokers from ``source`` to that hop."""
    out: dict[int, int] = {}
    queue: deque[tuple[str, str | None, int, int]] = deque([(source, None, 0, 0)])
    while queue:
        broker, from_hop, hops, steps = queue.popleft()
        d = net.brokers[broker].on_publication(Publication("e", "bench", dict(attrs), hops=hops), from_hop)
        steps += d.steps or 0
        out[hops] = max(out.get(hops, 0), steps)
        queue.extend((f.hop, broker, hops + 1, steps) for f in d.forwards)
    return out


def steps_by_hops(
    subscriptions: int, brokers: int, notifications: int, seed: int, matching: float = 0.01
) -> StepsByHops:
    """The steps of ``notifications`` notifications against ``subscriptions`` subscriptions of which a
    fraction ``matching`` matches each, on a path of ``brokers`` brokers."""
    scot = topology.tree(topology.path(brokers))
    ids = [b.id for b in scot.brokers]
    dont_care = g.calibrate(SCHEMA, [0], matching, seed)
    filters = [f for fs in g.subscriptions(SCHEMA, [0] * subscriptions, 1, dont_care, seed) for f in fs]
    net = SimNetwork(scot, routing.LINK_MATCHING, matching="pst")
    central = PstMatcher()
    for k, f in enumerate(filters):
        net.subscribe(f"s{k}", ids[k % len(ids)], f)
        central.add(k, f)
    per_hop: dict[int, list[int]] = {}
    central_steps = []
    for attrs in g.notifications(SCHEMA, 0, notifications, seed + 1):
        central.match(attrs)
        central_steps.append(central.last_steps)
        for hops, steps in cumulative_steps(net, ids[0], attrs).items():
            per_hop.setdefault(hops, []).append(steps)
    return StepsByHops(
        statistics.mean(central_steps), {h: statistics.mean(s) for h, s in sorted(per_hop.items())}
    )


def link_matching(hops: int) -> str:
    """The name of link matching's series at ``hops`` hops in :func:`summaries`."""
    return f"link-matching-{hops}-hops"


def summaries(
    seed: int, subscriptions: int, brokers: int, notifications: int, matching: float = 0.01
) -> dict[str, dict[str, Any]]:
    """:func:`steps_by_hops` as one summary per series (``matching.steps``): the centralised PST's under
    :data:`CENTRALISED`, link matching's at each hop count under :func:`link_matching`."""
    s = steps_by_hops(subscriptions, brokers, notifications, seed, matching)
    series = {CENTRALISED: s.centralised} | {link_matching(h): v for h, v in s.link_matching.items()}
    return {name: {"matching": {"steps": v}} for name, v in series.items()}
