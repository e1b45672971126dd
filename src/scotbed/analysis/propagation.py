"""When a subscription settled: the end of the propagation wave its own subscribe started.

A subscription settles when it has reached every broker its subscribe sent it to. A broker may send it
on later for another reason: under covering, the unsubscription of a covering subscription releases the
subscriptions it held back (a *re-forward*); a relinked overlay sends its table down a new link. Such a
later ``sub_in`` is no part of the subscription's settling, and must not reopen its transition window:
taking the *last* ``sub_in`` as the settling time would excuse every publication that matched it
until then.

The wave is traced from the broker event logs (docs/design.md §5) as brokers write them. A broker handles one
message at a time and logs what it sends while it handles it: a ``sub_out`` belongs to the *trigger*
logged last before it at that broker (a ``sub_in``, an ``unsub_in``, a ``link_up`` or a
``link_down``). A wave starts at a ``sub_in`` from a local client (``link`` "") and goes on through
each ``sub_out`` of the subscription whose trigger is a wave ``sub_in`` of that subscription; the
``k``-th ``sub_out`` of a subscription on a link arrives as the neighbour's ``k``-th ``sub_in`` of it
from that link (links are FIFO). The subscription settled when the wave had first reached each of its
brokers. Only times at one broker are compared with each other, except for that last maximum, so
clocks that differ between hosts do not change which events belong to the wave.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from scotbed import contract

#: the events that start a broker's handling of something: what a later ``sub_out`` belongs to
TRIGGERS = (contract.SUB_IN, contract.UNSUB_IN, contract.LINK_UP, contract.LINK_DOWN)
#: the events the trace reads
EVENTS = (*TRIGGERS, contract.SUB_OUT)
#: the fields of an event the trace reads, in :func:`wave_ends`' row order
COLUMNS = ("ts_ns", "node", "ev", "sub_id", "link")

Row = tuple[int, str, str, str | None, str | None]
At = tuple[str, int]  # (broker, index of the event in that broker's log order)


@dataclass
class _Trace:
    """The events of the logs, indexed for the walk along the waves."""

    ts: dict[At, int] = field(default_factory=dict)
    #: a wave candidate ``sub_in`` -> the (link, k) of each ``sub_out`` of its subscription it triggered
    sent: dict[At, list[tuple[str, int]]] = field(default_factory=lambda: defaultdict(list))
    #: (sub_id, from, to) -> the ``sub_in`` events at ``to`` from ``from``, in order
    received: dict[tuple[str, str, str], list[At]] = field(default_factory=lambda: defaultdict(list))
    #: sub_id -> its ``sub_in`` events from a local client (the waves' starts) and all its ``sub_in``
    roots: dict[str, list[At]] = field(default_factory=lambda: defaultdict(list))
    any_in: dict[str, list[At]] = field(default_factory=lambda: defaultdict(list))


def wave_ends(rows: Iterable[Row]) -> dict[str, list[int]]:
    """sub_id -> the end (ns, the broker's clock) of each of its propagation waves, in the order of
    their starts; ``rows`` are (ts_ns, node, ev, sub_id, link) of :data:`EVENTS`, in log order per
    broker where timestamps tie. A subscription whose logs hold no ``sub_in`` from a client (its home
    broker's log is lost) has one wave, from its earliest ``sub_in``."""
    trace = _index(rows)
    ends: dict[str, list[int]] = {}
    for sub_id, ins in trace.any_in.items():
        starts = trace.roots.get(sub_id) or [min(ins, key=trace.ts.__getitem__)]
        ends[sub_id] = [_wave_end(trace, sub_id, s) for s in sorted(starts, key=trace.ts.__getitem__)]
    return ends


def unsub_ends(rows: Iterable[Row]) -> dict[str, int]:
    """sub_id -> its last ``unsub_in`` (ns): when its unsubscription's propagation ended."""
    ends: dict[str, int] = {}
    for ts, _, ev, sub_id, _ in rows:
        if ev == contract.UNSUB_IN and sub_id is not None:
            ends[sub_id] = max(ts, ends.get(sub_id, ts))
    return ends


def _index(rows: Iterable[Row]) -> _Trace:
    by_node: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_node[row[1]].append(row)
    trace = _Trace()
    for node, events in by_node.items():
        events.sort(key=lambda r: r[0])  # stable: log order where timestamps tie
        trigger: tuple[At, str | None, str] | None = None
        out_count: dict[tuple[str, str], int] = defaultdict(int)
        for i, (ts, _, ev, sub_id, link) in enumerate(events):
            at = (node, i)
            trace.ts[at] = ts
            if ev in TRIGGERS:
                trigger = (at, sub_id, ev)
            if ev == contract.SUB_IN and sub_id is not None:
                trace.any_in[sub_id].append(at)
                if link:
                    trace.received[(sub_id, link, node)].append(at)
                else:
                    trace.roots[sub_id].append(at)
            elif ev == contract.SUB_OUT and sub_id is not None and link:
                k = out_count[(sub_id, link)]
                out_count[(sub_id, link)] = k + 1
                if trigger is not None and trigger[2] == contract.SUB_IN and trigger[1] == sub_id:
                    trace.sent[trigger[0]].append((link, k))
    return trace


def _wave_end(trace: _Trace, sub_id: str, start: At) -> int:
    """When the wave from ``start`` had first reached each of its brokers: a copy arriving later by
    another path (an overlay with cycles) changes no table."""
    first: dict[str, int] = {}
    todo, seen = [start], {start}
    while todo:
        at = todo.pop()
        first[at[0]] = min(trace.ts[at], first.get(at[0], trace.ts[at]))
        for link, k in trace.sent.get(at, ()):
            arrivals = trace.received.get((sub_id, at[0], link), [])
            if k < len(arrivals) and arrivals[k] not in seen:
                seen.add(arrivals[k])
                todo.append(arrivals[k])
    return max(first.values())
