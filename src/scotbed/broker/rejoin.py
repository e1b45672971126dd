"""Rejoining: a restarted broker's routing state rebuilt from what its neighbours had sent it.

Every broker keeps, per directed link, the *sent log*: the subscriptions and
unsubscriptions it queued for that neighbour, in order, with a subscription
and its later unsubscription (same sub_id and host, neither packing others)
cancelled out. When a neighbour's hello, or the ack of the broker's own hello,
carries a new incarnation (the process was restarted, not merely redialled), the broker puts the log back
at the head of that link's output queue, behind one ``Control{kind:
"replay", count: n}`` envelope. The receiver processes the next ``n`` routing
envelopes from that neighbour as a *replay*: the plug-in sees them exactly
as before (same from_hop, same message, same order per link), so its table
is rebuilt, but the runtime sends none of the resulting forwards — the other
neighbours already hold what the old process had sent them. The forwards
are still written to the replaying broker's own sent logs, so a later
restart of one of its neighbours is rebuilt in turn.

The guarantee. After a restart the broker's routing state is the state of
the old process for every subscription its neighbours had sent it (for any
deterministic plug-in; state a plug-in derives from publications, such as
selective pruning's history or DNR's congestion marks, starts empty).
Subscriptions of the broker's own clients are lost with their sessions.

A replay cut short by another restart starts over (:meth:`scotbed.broker.linkout.LinkOut.replay`):
what is left of the earlier block is taken off the queue and out of the unacknowledged batches,
and the newest process gets the whole log once, as a replay, and nothing of it as new routing.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from scotbed.messages import Message, Subscription, Unsubscription
from scotbed.v1 import scotbed_pb2 as pb

REPLAY = "replay"  # the control envelope's kind
COUNT = "count"  # its argument: the routing envelopes that follow and are replayed
REPLAYED = object()  # the ``raw`` of an input item that is a replay (runtime: forwards not sent)

Sized = tuple[pb.Envelope, int]  # an envelope and its encoded bytes, as the output queue holds them


E = TypeVar("E")  # what a log keeps per routing message: an encoded envelope here, the message in the sim


class RoutingLog(Generic[E]):
    """The routing messages queued on one link, in order, net of cancelled subscribe/unsubscribe pairs:
    the rule of the sent log, whatever form its entries take (the runtime's envelopes, the sim
    backend's messages)."""

    def __init__(self) -> None:
        self._log: dict[Hashable, E] = {}
        self._serial = 0

    def __len__(self) -> int:
        return len(self._log)

    def record(self, msg: Message, entry: E) -> None:
        plain = not getattr(msg, "packed", ())
        key = ("s", msg.sub_id, msg.host_broker) if isinstance(msg, Subscription | Unsubscription) else None
        if isinstance(msg, Unsubscription) and plain and key in self._log:
            del self._log[key]  # the neighbour holds neither any more
            return
        if isinstance(msg, Subscription) and plain and key not in self._log:
            self._log[key] = entry
            return
        self._serial += 1
        self._log[("n", self._serial)] = entry

    def entries(self, pending: Callable[[E], bool] | None = None) -> list[E]:
        """The log in order, without the entries ``pending`` says are still queued or unacknowledged:
        those reach the new process as ordinary routing (its forwards sent), since the old one may never
        have handled them."""
        return [e for e in self._log.values() if pending is None or not pending(e)]


class SentLog(RoutingLog[Sized]):
    """The routing envelopes queued on one link, net of cancelled subscribe/unsubscribe pairs."""

    def replay(self, pending: Callable[[Sized], bool] | None = None) -> list[Sized]:
        """The control envelope and the log (:meth:`RoutingLog.entries`), in order: what to put at the
        head of the output queue."""
        entries = self.entries(pending)
        control = pb.Envelope()
        control.control.kind = REPLAY
        control.control.args[COUNT] = str(len(entries))
        return [(control, control.ByteSize()), *entries]


def replay_count(env: pb.Envelope) -> int | None:
    """``n`` when ``env`` announces a replay of the next ``n`` routing envelopes, else None."""
    if env.WhichOneof("body") != "control" or env.control.kind != REPLAY:
        return None
    try:
        return max(0, int(env.control.args.get(COUNT, "0")))
    except ValueError:
        return None
