"""A row as a campaign, and whether a record's runs are of the spec the row resolves to today.

A row's figures are trustworthy only for the spec they were measured with. Each run's record keeps the
fingerprint of its cell's resolved spec (what the campaign index resumes by); resolving the row's cells
again and comparing says whether the spec file or the row's scale changed after the measurement, with
no git history needed when the table is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scotbed.experiment.spec import SpecError
from scotbed.orchestrator.campaign import Campaign, Sweep, fingerprint
from scotbed.orchestrator.reproduce import computed
from scotbed.orchestrator.reproduce.record import RowRecord
from scotbed.orchestrator.reproduce.rows import Row

REPO = Path(__file__).resolve().parents[4]


def campaign_of(row: Row, quick: bool, repetitions: int | None = None) -> Campaign:
    """The row as a campaign: its spec × its compared values of ``vary`` (routing unless the row says)
    × repetitions (the row's unless overridden), at the row's scale."""
    assert row.spec is not None
    return Campaign(
        name=f"{row.name}-quick" if quick else row.name,
        base=(REPO / row.spec).resolve(),
        matrix={row.vary: [row.value(n) for n in row.compare]},
        repetitions=repetitions or row.reps(quick),
        sets=list(row.sets(quick)),
        saturate=Sweep.from_doc(row.saturate) if row.saturate else None,
    )


def cell_fingerprints(campaign: Campaign) -> dict[str, str]:
    """Each cell's key -> the fingerprint its campaign index records when the cell finishes (a
    saturate cell's covers the search bounds and the criterion too)."""
    if campaign.saturate is None:
        return {c.key: fingerprint(campaign.base, c.sets) for c in campaign.cells()}
    from scotbed.orchestrator.saturation import sweep_fingerprint

    return {c.key: sweep_fingerprint(campaign.base, c.sets, campaign.saturate) for c in campaign.cells()}


@dataclass(frozen=True)
class SpecToday:
    """How many of a record's runs were of the spec the row resolves to today (``None``: the row's
    spec no longer resolves, e.g. a key it sets was renamed)."""

    runs: int
    same: int | None

    @property
    def changed(self) -> bool:
        return self.same is None or self.same < self.runs


def spec_today(row: Row, record: RowRecord) -> SpecToday:
    """Compare each run's recorded fingerprint with its cell's today (a computed row's: its
    computation, parameters and seed)."""
    try:
        if row.computed is not None:
            today = computed.cell_fingerprints(row, record.quick, record.repetitions)
        else:
            today = cell_fingerprints(campaign_of(row, record.quick, record.repetitions))
    except SpecError:
        return SpecToday(len(record.runs), None)
    same = sum(today.get(r.cell) == r.spec_fingerprint for r in record.runs)
    return SpecToday(len(record.runs), same)
