"""The typed summary of a run: one dataclass per section of ``analysis/summary.json`` (docs/design.md §5).

Each section knows its JSON shape (``to_json``); :class:`Summary` keeps the
sections in the order the registry in :mod:`scotbed.analysis.sections` lists
them, and :func:`verdict` reads the typed correctness and notification counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol

SCHEMA_VERSION = 1


class Section(Protocol):
    def to_json(self) -> Any: ...


class Plain:
    """A section whose JSON is its fields, in order."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True)
class Events(Plain):
    total: int
    malformed: int
    files: int
    unreadable_receive: dict[str, Any]  # {"count", "lines"}: see scotbed.analysis.unreadable


@dataclass(frozen=True)
class Subscriptions(Plain):
    count: int
    ims_total: int
    ims_per_subscription: float
    unsub_ims_total: int
    delay_ms: dict[str, Any]


@dataclass(frozen=True)
class Correctness:
    """The oracle's verdict; ``ok`` is None (with ``reason``) when the workload files are missing."""

    ok: bool | None
    engine: str
    settle_ms: float
    counts: dict[str, int] = field(default_factory=dict)
    first: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    reason: str | None = None

    def count(self, name: str) -> int:
        return self.counts.get(name, 0)

    def to_json(self) -> dict[str, Any]:
        head: dict[str, Any] = {"ok": self.ok}
        if self.reason is not None:
            head["reason"] = self.reason
        return {**head, **self.counts, **self.first, "engine": self.engine, "settle_ms": self.settle_ms}


@dataclass(frozen=True)
class Notifications(Plain):
    published: int
    expected_deliveries: int
    delivered: int
    missing: int
    duplicates: int
    false_positives: int
    in_transition: int
    ims_total: int
    dynamic_copies: int
    delay_ms: dict[str, Any]
    send_delay_ms: dict[str, Any]
    matching_us: dict[str, Any]
    hops: dict[str, Any]
    #: expected deliveries still queued when the drain deadline cut the run (not ``missing``: see Drain)
    undelivered_at_stop: int = 0


@dataclass(frozen=True)
class Stability(Plain):
    window: int
    windows: int
    max_window_delay_ms: float
    burst: dict[str, int] | None
    recovery: dict[str, Any] | None


@dataclass(frozen=True)
class Queues(Plain):
    max_output_len: int
    max_input_len: int
    hrp_target_mean_len: float | None = None  # with an HRP: the mean over its target links (OctopiS §7)


@dataclass(frozen=True)
class Tables(Plain):
    max_size: int
    mean_final_size: float


@dataclass(frozen=True)
class Traffic:
    """Relay and false-positive overhead; empty when the oracle could not run."""

    counts: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dict(self.counts)


@dataclass(frozen=True)
class Load(Plain):
    mean_messages: float
    cv: float
    max_over_mean: float


@dataclass(frozen=True)
class Drops:
    by_reason: dict[str, int]

    def to_json(self) -> dict[str, int]:
        return dict(self.by_reason)


@dataclass(frozen=True)
class Links(Plain):
    """Per-link accounting (:mod:`scotbed.analysis.links`): links crossed per publication, and the
    (un)subscription messages per subscribe/unsubscribe operation."""

    per_publication: dict[str, Any]
    subscription_messages: int
    unsubscription_messages: int
    subscription_messages_per_subscribe: float
    unsubscription_messages_per_unsubscribe: float


@dataclass(frozen=True)
class Workload(Plain):
    """Workload fidelity (:mod:`scotbed.analysis.fidelity`): the realised selectivity next to its target."""

    subscriptions: int
    publications: int
    selectivity: dict[str, Any]


@dataclass(frozen=True)
class Pruning:
    """The unsubscription-burst metrics (:mod:`scotbed.analysis.pruning`); None (no key): not a tiered run."""

    block: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any] | None:
        return self.block


@dataclass(frozen=True)
class Drain(Plain):
    """The drain after the last publication (:data:`scotbed.contract.DRAIN`): did every broker go
    quiescent before ``timeouts.drain_s``? When it did not, the deliveries the oracle cannot find
    are counted as ``undelivered_at_stop``: queued when the subscribers left, not lost (a run cut
    with a backlog cannot tell the two apart). ``delay_excludes``: expected deliveries the delay
    statistics lack."""

    recorded: bool
    quiescent: bool
    deadline_s: float
    elapsed_s: float
    backlog_at_stop: int
    peak_backlog: int
    undelivered_at_stop: int
    delay_excludes: int


def drain_of(record: Mapping[str, Any] | None, unfound: int) -> Drain:
    """The drain section from the drain record (None: no record, a run without the host drain) and the
    oracle's count of expected deliveries never received."""
    if record is None:
        return Drain(False, True, 0.0, 0.0, 0, 0, 0, unfound)
    cut = not record["quiescent"] and int(record["backlog_at_stop"]) > 0
    return Drain(
        recorded=True,
        quiescent=bool(record["quiescent"]),
        deadline_s=float(record["deadline_s"]),
        elapsed_s=float(record["elapsed_s"]),
        backlog_at_stop=int(record["backlog_at_stop"]),
        peak_backlog=int(record["peak_backlog"]),
        undelivered_at_stop=unfound if cut else 0,
        delay_excludes=unfound,
    )


UNDRAINED = "UNDRAINED: "  # the verdict's prefix when only the drain deadline kept deliveries back


@dataclass
class Summary:
    """Header fields, the sections by name (registry order) and the environment of the analysis."""

    run_id: str
    routing: str
    topology: dict[str, int]
    sections: dict[str, Section]
    environment: dict[str, Any] = field(default_factory=dict)

    @property
    def correctness(self) -> Correctness:
        c = self.sections["correctness"]
        assert isinstance(c, Correctness)
        return c

    @property
    def notifications(self) -> Notifications:
        n = self.sections["notifications"]
        assert isinstance(n, Notifications)
        return n

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "run_id": self.run_id,
            "routing": self.routing,
            "topology": self.topology,
            **{name: j for name, s in self.sections.items() if (j := s.to_json()) is not None},
            "environment": self.environment,
        }


def verdict(summary: Summary, in_fault_windows: int = 0) -> tuple[bool, str]:
    """docs/design.md §3: no duplicate, no false positive, no missing delivery outside the transitions of a
    subscription change (those the oracle counts apart) or the run's declared fault windows
    (``in_fault_windows``, lost on purpose), and something was expected and delivered."""
    n = summary.notifications
    ok = (
        bool(summary.correctness.ok)
        and n.missing == 0
        and n.duplicates == 0
        and n.false_positives == 0
        and n.expected_deliveries > 0
        and n.delivered + in_fault_windows >= n.expected_deliveries
    )
    text = (
        f"{n.delivered} delivered of {n.expected_deliveries} expected (+{n.in_transition} in transition), "
        f"{n.missing} missing, {n.duplicates} duplicates, {n.false_positives} false positives"
    )
    if in_fault_windows:
        text += f", {in_fault_windows} lost inside fault windows"
    reason = summary.correctness.reason
    if n.undelivered_at_stop:
        ok = False
        text += f", {n.undelivered_at_stop} undelivered at stop (the backlog outlasted timeouts.drain_s)"
        # the oracle's own ``ok`` counts these as missing; the drain record says they were still queued
        clean = summary.correctness.ok is not None and n.missing == n.duplicates == n.false_positives == 0
        if clean and reason is None:
            return ok, UNDRAINED + text
    if reason is not None:
        text += f"; {reason}"
    return ok, ("correct: " if ok else "INCORRECT: ") + text


def verdict_of_json(doc: Mapping[str, Any]) -> tuple[bool, str]:
    """:func:`verdict` of a summary read back as JSON (``analysis/summary.json``, :func:`analyze`'s dict)."""
    try:
        notes = doc["notifications"]  # may carry more (the fault timeline's missing_in_fault_windows)
        n = Notifications(**{f.name: notes[f.name] for f in fields(Notifications) if f.name in notes})
        c = doc["correctness"]
        correctness = Correctness(
            c.get("ok"), str(c.get("engine", "")), float(c.get("settle_ms", 0.0)), reason=c.get("reason")
        )
    except (KeyError, TypeError) as e:
        return False, f"INCORRECT: the summary has no complete notification counts ({e})"
    return verdict(
        Summary(str(doc.get("run_id", "")), "", {}, {"notifications": n, "correctness": correctness}),
        int(notes.get("missing_in_fault_windows") or 0),
    )
