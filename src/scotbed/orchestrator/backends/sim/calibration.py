"""A broker process's own cost on this host, measured on real brokers, for the sim backend to add.

The time model (docs/design.md §11) charges a broker its ``service_us`` and a link its latency; a
broker process adds its own cost on top (gRPC, its event loop, the publisher's and the subscriber's
processes). :func:`measure` takes that cost from a run of broker processes as three means, each the
measured stage minus what the model gives it:

- ``client_in_us``: a publication's intended time → its first broker's ``notif_in``, less that
  broker's service (the publisher's lag, the call, the input queue);
- ``hop_us``: a copy's ``notif_out`` at one broker → ``notif_in`` at the next, less the link's
  latency and the receiver's service, plus the sender's own visit (``notif_in`` → its first
  ``notif_out``), so one hop carries both;
- ``client_out_us``: ``deliver`` → the subscriber's ``receive``.

The sim backend (``--calibration FILE``) adds them as delays, not as service: a client↔broker hop
takes ``client_in_us`` / ``client_out_us`` and every inter-broker message ``hop_us`` more. Its
delays then stand for broker processes on the host the calibration ran on, at a load like the
calibration run's; the run directory's provenance records the calibration it used.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.errors import UserError


class CalibrationError(UserError):
    """A calibration file or run that cannot be used; the message names the file or what is missing."""


@dataclass(frozen=True)
class HostCost:
    """What a broker process adds per client↔broker hop and per inter-broker hop, in µs."""

    client_in_us: float = 0.0
    hop_us: float = 0.0
    client_out_us: float = 0.0
    measured_on: dict[str, Any] | None = None  # the run it came from: spec, host, load, counts

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


NONE = HostCost()

#: calibration runs whose median ``scotbed calibrate`` keeps (this host's speed moves between runs)
DEFAULT_REPETITIONS = 3


@dataclass
class NotificationTimes:
    """The instants a run's event logs give each notification: where it entered, each visit, each copy
    sent, each delivery and receive (the stages of a delay; ``benchmarks/delay_breakdown.py`` too)."""

    first_in: dict[str, tuple[int, str]] = field(default_factory=dict)  # pub -> (notif_in, its broker)
    arrived: dict[tuple[str, str], int] = field(default_factory=dict)  # (broker, pub) -> first notif_in
    outs: dict[tuple[str, str], list[tuple[int, str]]] = field(default_factory=dict)  # -> (ts, link)s
    delivered: dict[tuple[str, str], int] = field(default_factory=dict)  # (pub, sub) -> deliver
    published: dict[str, tuple[int, int]] = field(default_factory=dict)  # pub -> (sent_ns, intended_ns)
    received: dict[tuple[str, str], int] = field(default_factory=dict)  # (pub, sub) -> receive

    @classmethod
    def of(
        cls, brokers: Iterable[Mapping[str, Any]], clients: Iterable[Mapping[str, Any]]
    ) -> NotificationTimes:
        t = cls()
        for e in brokers:
            ev, node = e["ev"], e["node"]
            if ev == contract.NOTIF_IN:
                t.arrived.setdefault((node, e["pub_id"]), e["ts_ns"])
                if not e.get("link"):
                    t.first_in.setdefault(e["pub_id"], (e["ts_ns"], node))
            elif ev == contract.NOTIF_OUT:
                t.outs.setdefault((node, e["pub_id"]), []).append((e["ts_ns"], e["link"]))
            elif ev == contract.DELIVER:
                t.delivered[(e["pub_id"], e["sub_id"])] = e["ts_ns"]
        for e in clients:
            if e["ev"] == contract.PUBLISH:
                t.published[e["pub_id"]] = (e["sent_ns"], e["intended_ns"])
            elif e["ev"] == contract.RECEIVE:
                t.received[(e["pub_id"], e["sub_id"])] = e["ts_ns"]
        return t


def measure(
    brokers: Iterable[Mapping[str, Any]],
    clients: Iterable[Mapping[str, Any]],
    service_us: Mapping[str, float],
    latency_ms: Mapping[tuple[str, str], float],
) -> HostCost:
    """The host's cost from a run's broker and client events, less the model's: ``service_us`` per
    broker, ``latency_ms`` per directed link (sender, receiver)."""
    t = NotificationTimes.of(brokers, clients)
    first_in, arrived, outs, delivered, received = t.first_in, t.arrived, t.outs, t.delivered, t.received
    intended = {p: due for p, (_, due) in t.published.items()}
    client_in = [
        (t - intended[p]) / 1e3 - service_us.get(b, 0.0) for p, (t, b) in first_in.items() if p in intended
    ]
    hops = [
        (arrived[(link, p)] - t) / 1e3
        - latency_ms.get((node, link), 0.0) * 1e3
        - service_us.get(link, 0.0)
        + (min(s for s, _ in sent) - arrived[(node, p)]) / 1e3
        for (node, p), sent in outs.items()
        if (node, p) in arrived
        for t, link in sent
        if (link, p) in arrived
    ]
    client_out = [(t - delivered[k]) / 1e3 for k, t in received.items() if k in delivered]
    if not (client_in and hops and client_out):
        raise CalibrationError(
            "the calibration run has no notification that crossed a link and was received "
            f"({len(client_in)} published, {len(hops)} hops, {len(client_out)} receives)"
        )
    return HostCost(
        client_in_us=max(0.0, round(statistics.fmean(client_in), 1)),
        hop_us=max(0.0, round(statistics.fmean(hops), 1)),
        client_out_us=max(0.0, round(statistics.fmean(client_out), 1)),
        measured_on={"notifications": len(client_in), "hops": len(hops), "receives": len(client_out)},
    )


def median(costs: Sequence[HostCost]) -> HostCost:
    """One cost from the costs of repeated calibration runs: each field's median, so one run taken
    while the host was slower or faster does not set it; ``measured_on`` lists every run's."""
    if not costs:
        raise CalibrationError("a calibration needs at least one run")
    return HostCost(
        client_in_us=statistics.median(c.client_in_us for c in costs),
        hop_us=statistics.median(c.hop_us for c in costs),
        client_out_us=statistics.median(c.client_out_us for c in costs),
        measured_on={"runs": [c.to_json() for c in costs]},
    )


def write(cost: HostCost, path: Path) -> None:
    path.write_text(json.dumps(cost.to_json(), indent=1) + "\n")


def load(path: Path) -> HostCost:
    """A file of ``scotbed calibrate``; a :class:`CalibrationError` names what is wrong with it."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise CalibrationError(f"{path}: not a calibration file: {e}") from None
    fields = ("client_in_us", "hop_us", "client_out_us")
    bad = [f for f in fields if not isinstance(doc.get(f), int | float) or doc[f] < 0]
    if not isinstance(doc, dict) or bad:
        raise CalibrationError(f"{path}: {', '.join(bad) or 'the document'}: a number of µs >= 0 is required")
    us = [float(doc[f]) for f in fields]
    return HostCost(us[0], us[1], us[2], measured_on=doc.get("measured_on"))
