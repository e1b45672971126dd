"""docs/reproduction.md: the paper's effect next to scotbed's, with the scale, the command, the
provenance and a plot per row, written from the rows' records (:mod:`.record`) alone."""

from __future__ import annotations

import math
import textwrap
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from scotbed.analysis.validity import HOST_BOUND
from scotbed.orchestrator.reproduce.cells import SpecToday, spec_today
from scotbed.orchestrator.reproduce.computations import COMPUTATIONS
from scotbed.orchestrator.reproduce.effects import (
    AGREES,
    DIRECTION_ONLY,
    DISAGREES,
    INCONCLUSIVE,
    NO_DATA,
    SIZE_FACTOR,
    Judged,
    judge,
    relative_changes,
)
from scotbed.orchestrator.reproduce.record import QUICK_SUFFIX, RowRecord
from scotbed.orchestrator.reproduce.rows import Effect, Row

PLOTS = "reproduction"  # folder of the per-row plots, next to the document
BAR_IN = 1.6  # inches per effect in a row's plot
LABEL_CHARS = 20  # a tick label's line width at font size 8 that fits under one bar of BAR_IN
#: the verdicts in the order the tallies list them
VERDICTS = (AGREES, DIRECTION_ONLY, DISAGREES, INCONCLUSIVE, HOST_BOUND, NO_DATA)


@dataclass(frozen=True)
class Measured:
    """A row with its record, each effect judged from the record's runs."""

    row: Row
    record: RowRecord
    judged: list[Judged]
    spec: SpecToday

    @classmethod
    def of(cls, row: Row, record: RowRecord) -> Measured:
        return cls(row, record, [_judged(e, record) for e in row.effects], spec_today(row, record))


def _judged(e: Effect, record: RowRecord) -> Judged:
    """The effect judged from the record's runs; ``host-bound`` when only host-bound runs had it."""
    j = judge(e, relative_changes(e, record.summaries(e)))
    if j.verdict == NO_DATA and e.timed and record.host_bound(e.variant, e.baseline):
        return replace(j, verdict=HOST_BOUND)
    return j


def chosen_records(rows: list[Row], records: dict[str, RowRecord]) -> dict[str, Measured]:
    """Each row's record at full scale, else at the quick scale; rows without one are left out."""
    out = {}
    for row in rows:
        record = records.get(row.name) or records.get(row.name + QUICK_SUFFIX)
        if record is not None:
            out[row.name] = Measured.of(row, record)
    return out


def _pct(x: float) -> str:
    """Whole per cents, but never a rounded ±100 % for a change that is not all or nothing, nor a
    rounded 0 % for one that is not none (the paper's "0.32 % more" stays 0.32 %)."""
    if math.isnan(x):
        return "n/a"
    whole = round(x * 100)
    if (abs(whole) == 100 and abs(x) != 1) or (whole == 0 and x != 0):
        return f"{x * 100:+.2f} %"
    return f"{x * 100:+.0f} %"


def _paper(e: Effect) -> str:
    if e.at_most is not None:
        return f"at most {_pct(e.at_most)} (a bound in the text)"
    if e.at_least is not None:
        return f"at least {_pct(e.at_least)} (a bound in the text)"
    return _pct(e.paper)


def _measured(j: Judged) -> str:
    ci = j.measured
    if j.verdict == HOST_BOUND:
        return "every run host-bound (left out)"
    if ci.n == 0:
        return NO_DATA
    if ci.n == 1:
        return f"{_pct(ci.mean)} (n = 1, no interval)"
    return f"{_pct(ci.mean)} [{_pct(ci.low)}, {_pct(ci.high)}] (n = {ci.n})"


def plot_row(m: Measured, path: Path) -> None:
    """Measured effects with their 95 % intervals as bars, the paper's as diamonds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [_tick_label(j) for j in m.judged]
    means = [0.0 if math.isnan(j.measured.mean) else j.measured.mean * 100 for j in m.judged]
    err = [j.measured.half_width * 100 if j.measured.has_interval else 0.0 for j in m.judged]
    fig, ax = plt.subplots(figsize=(3.2 + BAR_IN * len(labels), 3.9))
    xs = range(len(labels))
    ax.bar(xs, means, yerr=err, capsize=4, color="#4c78a8", label="scotbed (95 % CI)")
    effects = [(x, j.effect) for x, j in zip(xs, m.judged, strict=True)]
    paper = [(x, e.paper * 100) for x, e in effects if e.bound is None]
    at_most = [(x, e.at_most * 100) for x, e in effects if e.at_most is not None]
    at_least = [(x, e.at_least * 100) for x, e in effects if e.at_least is not None]
    for points, marker, label in (
        (paper, "D", "paper"),
        (at_most, "v", "paper's bound (at most)"),
        (at_least, "^", "paper's bound (at least)"),
    ):
        if points:
            ax.scatter(*zip(*points, strict=True), marker=marker, color="#e45756", zorder=3, label=label)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(list(xs), labels, fontsize=8)
    ax.set_ylabel("relative change (%)")
    ax.set_title(f"{m.row.name}: {m.row.figure}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _tick_label(j: Judged) -> str:
    """The effect and its comparison, wrapped so that neighbouring bars' labels do not overlap."""
    e = j.effect
    lines = textwrap.wrap(e.label, LABEL_CHARS) + textwrap.wrap(f"{e.variant} vs {e.baseline}", LABEL_CHARS)
    return "\n".join(lines)


def _runs_line(row: Row, record: RowRecord) -> str:
    runs = record.runs
    if row.computed is not None:
        seeds = sorted({r.cell.rpartition("seed=")[2] for r in runs}, key=int)
        return (
            f"- Runs: computed, no broker runs: {len(runs)} figures from seeds {', '.join(seeds)}, "
            f"{sum(r.seconds for r in runs):.0f} s of computing; no spec, no validity verdict, no oracle"
        )
    incorrect = [r.cell for r in runs if r.correct is False]
    correct = f"not correct (oracle): {', '.join(incorrect)}" if incorrect else "every run correct"
    if runs and all(r.correct is None for r in runs):  # a saturate probe runs no analysis, so no oracle
        correct = "no oracle verdict (saturate searches: each probe is judged from its event logs)"
    validity = Counter(r.validity for r in runs if r.validity)
    left_out = {HOST_BOUND: " (left out of the delay and queue effects)"}
    valid = ", ".join(f"{n} {v}{left_out.get(v, '')}" for v, n in sorted(validity.items()))
    seconds = sum(r.seconds for r in runs)
    return f"- Runs: {len(runs)} finished, {seconds:.0f} s of runs; {correct}; validity: {valid or 'none'}"


def _provenance_line(record: RowRecord) -> str:
    load = record.load_1min
    during = (
        f"load average (1 min) {min(load):.1f}–{max(load):.1f} over {len(load)} samples during the runs"
        if load
        else "load average not recorded (runs resumed from an earlier invocation)"
    )
    return (
        f"- Measured: {record.date_utc}, commit `{record.commit}`, a host with {record.cores} cores, {during}"
    )


def _spec_line(m: Measured) -> str:
    """The commit that last changed the row's spec file when it was measured, and whether the row still
    resolves to the specs its runs had: a change since (to the spec or the row's scale) is stated, so
    a figure is never read as today's spec's when it is not."""
    commit = m.record.spec_commit
    when = f"last changed at commit `{commit}` when measured" if commit else "its last change not recorded"
    spec = m.spec
    if m.row.computed is not None:
        today = (
            f"its parameters or seeds changed after this measurement (`scotbed reproduce {m.row.name}` "
            "computes it again)"
            if spec.changed
            else "unchanged since: the row's parameters and seeds are those of every figure"
        )
        return f"- Computation: `{m.row.computed}` ({_module(m.row.computed)}) {when}; {today}"
    if spec.same is None:
        today = "the row's spec no longer resolves: the figures are of an earlier spec"
    elif spec.changed:
        today = (
            f"changed after this measurement: {spec.runs - spec.same} of {spec.runs} runs' resolved specs "
            "differ from the row's today (the spec file, the row's scale or a default the spec resolves "
            f"with; `scotbed reproduce {m.row.name}` measures it again)"
        )
    else:
        today = "unchanged since: every run's resolved spec is the row's today"
    return f"- Spec: `{m.row.spec}` {when}; {today}"


def _module(name: str) -> str:
    return f"`{COMPUTATIONS[name].partition(':')[0]}`"


def _row_section(m: Measured, doc_dir: Path) -> list[str]:
    row, record = m.row, m.record
    plot = doc_dir / PLOTS / f"{record.stem}.png"
    plot_row(m, plot)
    lines = [
        f"### {_heading(m)}",
        "",
        "| effect | paper | scotbed (mean [95 % CI]) | verdict |",
        "|---|---|---|---|",
    ]
    for j in m.judged:
        e = j.effect
        lines.append(
            f"| {e.label}, {e.variant} vs {e.baseline} | {_paper(e)} | {_measured(j)} | {j.verdict} |"
        )
    if row.computed is not None:
        runs = f"computes `{row.computed}` for {', '.join(row.compare)}, {record.repetitions} repetition(s)"
        scale = f"Parameters{' (quick)' if record.quick else ''}: `{' '.join(record.scale)}`"
    else:
        runs = (
            f"runs `{row.spec}` with {row.vary} in {', '.join(row.compare)}, "
            f"{record.repetitions} repetition(s), seeds from the spec's seed"
        )
        sets = " ".join(f"--set {s}" for s in record.scale) or "the spec as is"
        scale = f"Scale{' (quick)' if record.quick else ''}: `{sets}`"
    lines += [
        "",
        f"![{row.name}]({PLOTS}/{plot.name})",
        "",
        f"- Command: `{record.command}` ({runs})",
        f"- {scale}",
        _runs_line(row, record),
        _provenance_line(record),
        _spec_line(m),
        f"- Data: `{PLOTS}/{record.stem}.json`",
        f"- Why scotbed may differ: {row.notes}",
        "",
    ]
    return lines


def tally(judged: list[Judged]) -> str:
    """How many effects got each verdict, in :data:`VERDICTS` order, the verdicts no effect got left out."""
    counts = Counter(j.verdict for j in judged)
    return ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v]) or "no effect"


def _status(row: Row, measured: dict[str, Measured]) -> str:
    if not row.runnable:
        return row.status
    if row.name not in measured:
        return f"{row.status}; not measured yet (`scotbed reproduce {row.name}`)"
    m = measured[row.name]
    scale = " at the quick scale only" if m.record.quick else ""
    return f"[measured]({_anchor(m)}){scale}: {tally(m.judged)}"


def _anchor(m: Measured) -> str:
    """The link to a row's section: GitHub's anchor of its heading (lower case, spaces to hyphens,
    punctuation other than hyphens and underscores dropped)."""
    heading = _heading(m).lower().replace(" ", "-")
    return "#" + "".join(c for c in heading if c.isalnum() or c in "-_")


def _heading(m: Measured) -> str:
    return f"{m.row.name}: {m.row.paper}, {m.row.figure}"


def write_doc(path: Path, rows: list[Row], measured: dict[str, Measured]) -> None:
    """The whole document: the status of every row, then a section per measured row."""
    doc_dir = path.parent
    lines = [
        "# Reproduction: the papers' headline effects, measured by scotbed",
        "",
        f"Written by `scotbed reproduce` from the rows' records in `{PLOTS}/<row>.json`",
        "(`scotbed reproduce --table-only` writes it again from those alone; it is not edited by hand).",
        "An effect is the relative change",
        "(variant − baseline) / baseline of one summary metric, paired by repetition (same seed);",
        "scotbed's value is the mean over the repetitions with a 95 % t interval. Verdict: *agrees* when",
        f"the direction matches and the size is within a factor {SIZE_FACTOR:g} of the paper's, *direction",
        "only* when only the direction matches, *disagrees* when the direction is opposite, *inconclusive*",
        "when the interval spans 0. Where the paper's text states only a bound (in words, such as",
        '"equally or better", or as a limit, such as "never exceeds 30%"), *agrees* within the bound,',
        "*disagrees* beyond it, *inconclusive* when the interval spans it.",
        "A run whose validity verdict is host-bound (its delays measure the host, docs/host-bound.md) is",
        "left out of the effects on delays and queue lengths and counted; message counts, table sizes and",
        "loads keep every run. A delay or queue effect that only host-bound runs had reads *host-bound*.",
        "Each row names the commit it was measured at, the host's cores and its load average during the",
        "runs, and every run's validity verdict (a host-bound run's delays measure the host). Its spec line",
        "says whether the row's spec or scale changed after it was measured (each run's resolved spec",
        "against the row's today).",
        "",
        "| system | paper | status |",
        "|---|---|---|",
    ]
    lines += [f"| {r.system} | {r.paper} | {_status(r, measured)} |" for r in rows]
    every = [j for m in measured.values() for j in m.judged]
    lines += ["", f"Over the {len(measured)} measured rows, {len(every)} effects: {tally(every)}.", ""]
    for row in rows:
        if row.name in measured:
            lines += _row_section(measured[row.name], doc_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines).rstrip("\n") + "\n")
