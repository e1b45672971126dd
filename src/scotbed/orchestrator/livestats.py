"""The publish phase's live figures, from the brokers' Admin.Status replies and the workload's status.

One line, like Locust's console stats: notifications the brokers accepted from publishers of those the
plan holds, deliveries the brokers made, the largest queue and the worst event-loop lag with where
they are, and how many publishers are done. Every figure but the last is the brokers' own, from one
round of Status calls, so they agree with each other. Pure: the lifecycle asks the
brokers (:class:`scotbed.broker.statuspoll.StatusPoller`) and reads ``locust/status.json``; this
module turns what they returned into the figures and their text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scotbed import contract
from scotbed.broker.server import CLIENT_PUB


@dataclass(frozen=True)
class LiveFigures:
    published: int  # notifications the brokers accepted from their publishers (``client_pub``)
    expected: int  # the notifications the workload plan publishes
    delivered: int  # deliveries the brokers handed to their subscribers (``deliver``)
    largest_queue: int  # the longest input or link output queue of any broker
    largest_queue_at: str  # "b-v1-0" (its input) or "b-v1-0→b-v2-0" (a link's output); "" if none
    worst_lag_ms: float  # the worst event-loop lag of the brokers' last ``loop`` samples
    worst_lag_at: str
    publishers_done: int
    publishers: int
    answered: int  # brokers whose Status these figures include
    brokers: int

    def text(self) -> str:
        done = f"publishers done {self.publishers_done}/{self.publishers}"
        if self.answered == 0:
            return f"no broker answered Status yet, {done}"
        figures = [
            f"published {self.published}/{self.expected}",
            f"delivered {self.delivered}",
            f"largest queue {self.largest_queue}{_at(self.largest_queue_at)}",
            f"worst loop lag {self.worst_lag_ms:.1f} ms{_at(self.worst_lag_at)}",
            done,
        ]
        if self.answered < self.brokers:
            figures.append(f"{self.answered}/{self.brokers} brokers answered")
        return ", ".join(figures)

    def fields(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _at(where: str) -> str:
    return f" ({where})" if where else ""


def queues(reply: Any) -> list[tuple[int, str]]:
    """One broker's queues as (length, where): its input, then each link's output."""
    out = [(int(reply.input_len), reply.broker_id)]
    out += [(int(x.output_len), f"{reply.broker_id}→{x.neighbour}") for x in reply.links]
    return out


def figures(
    replies: Mapping[str, Any], workload: Mapping[str, Any], expected: int, brokers: int
) -> LiveFigures:
    """The live figures from the brokers that answered (``replies``: id -> StatusReply) and the
    workload's status document (``publishers_done``, ``publishers``)."""
    ordered = [replies[b] for b in sorted(replies)]  # ties go to the first broker by id
    largest = max((q for r in ordered for q in queues(r)), key=lambda q: q[0], default=(0, ""))
    lagging = max(ordered, key=lambda r: r.loop_lag_ms_max, default=None)
    worst = lagging.loop_lag_ms_max if lagging is not None else 0.0
    return LiveFigures(
        published=sum(int(r.counters.get(CLIENT_PUB, 0)) for r in ordered),
        expected=expected,
        delivered=sum(int(r.counters.get(contract.DELIVER, 0)) for r in ordered),
        largest_queue=largest[0],
        largest_queue_at=largest[1] if largest[0] else "",
        worst_lag_ms=round(float(worst), 3),
        worst_lag_at=lagging.broker_id if lagging is not None and worst > 0 else "",
        publishers_done=int(workload.get("publishers_done", 0)),
        publishers=int(workload.get("publishers", 0)),
        answered=len(ordered),
        brokers=brokers,
    )
