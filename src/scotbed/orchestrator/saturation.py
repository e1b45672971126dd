"""Saturation: the highest publish rate a spec sustains, by bisection over short runs.

**The criterion** (pure: :class:`Criterion`, :func:`judge`, :func:`bisect_rate`). A run is
*sustainable* (Gryphon's "not overloaded", PADRES' maximum sustainable rate) when, over the
measuring window (the publish phase after a warm-up fraction):

1. delivery keeps up with generation: of the deliveries of notifications due in the window, at least
   ``keep_up_min`` happen before the window ends plus ``slack_s``;
2. no queue grows: the least-squares slope of every queue's sampled length over the window, each
   broker's input queue (a broker too slow for its load) and each output queue (a link too slow),
   is at most ``growth_max`` messages/s, or the queue never exceeds ``queue_floor`` messages.

The bisection keeps ``lo`` sustainable and ``hi`` not, and stops when ``hi - lo <= tolerance * lo`` or
after ``max_probes`` runs; probes already measured (a resumed search) are reused, and the rates it asks
for are a pure function of the bounds, so a resumed search asks for the same ones.

**``scotbed saturate SPEC --param workload.rate_per_minute [--lo --hi]``** (:func:`main`). The probes
are short runs with no Spark analysis: the verdict comes from the raw event logs (:func:`read_run`).
Every probe is recorded in ``OUT/<name>-saturate/index.json`` as soon as it ends, so running the same
command again resumes: the bisection asks for the same rates and recalls the ones already measured.
``--versus KEY=VALUE`` runs a second search with that override (e.g. ``routing=flooding``) and reports
the ratio of the two rates. The plot ``queue-growth.png`` shows the largest queue growth against
the rate of every probe. What it finds goes to stdout (with ``--log-json`` as one ``result`` JSON line,
the criterion and the probes as JSON lines on stderr; with ``--quiet`` only the results).

**A campaign whose cells are searches** (the campaign file's ``saturate:`` block, :func:`run_sweep`).
Each cell (matrix values × repetition) bisects ``saturate.param`` and records its sustainable interval
in the campaign's ``index.json``. A cell counts as finished only for the resolved spec and search it
ran (its fingerprint), as a campaign's run cell does; its probes are kept in ``probes.json``, so an
interrupted cell resumes at the probe it had reached. The aggregate is ``analysis/saturation.csv``, a
plot of the interval against each swept key per routing, and ``report.html``
(:mod:`scotbed.analysis.saturation`).

The campaign's model (:mod:`scotbed.orchestrator.campaign`) holds the ``saturate:`` block's
:class:`~scotbed.orchestrator.campaign.Sweep` and imports nothing from here; this module builds on it.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.orchestrator.campaign import (
    INDEX,
    Campaign,
    CampaignIndex,
    RecordIndex,
    Search,
    Sweep,
    fingerprint,
)
from scotbed.terminal import emit_json


@dataclass(frozen=True)
class Criterion:
    warmup_fraction: float = 0.3  # of the publish span, not measured
    keep_up_min: float = 0.95  # fraction of the window's deliveries made in time
    slack_s: float = 1.0  # a delivery within this long after the window's end is in time
    growth_max: float = 1.0  # messages/s a queue may grow by over the window
    queue_floor: int = 20  # a queue never longer than this does not count as growing

    def describe(self) -> str:
        return (
            f"sustainable = over the publish phase after its first {self.warmup_fraction:.0%}, "
            f">= {self.keep_up_min:.0%} of the deliveries made by the window's end + {self.slack_s:g} s, "
            f"and every input and output queue grows <= {self.growth_max:g} messages/s "
            f"(or stays <= {self.queue_floor} messages)"
        )


@dataclass(frozen=True)
class Verdict:
    sustainable: bool
    keep_up: float  # fraction of the window's deliveries made in time (1.0 when there were none)
    max_growth: float  # the largest queue slope (messages/s) among queues above the floor
    worst_queue: str  # that queue: "broker->link", or "broker input" ("" when none)
    max_queue: int  # the longest queue sampled in the window
    window_s: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (t, y) points; 0 for fewer than two distinct times."""
    n = len(points)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    return sum((t - mt) * (y - my) for t, y in points) / var


def judge(
    intended_ns: Mapping[str, int],
    deliveries: Iterable[tuple[str, int]],
    queues: Mapping[str, list[tuple[int, int]]],
    criterion: Criterion,
) -> Verdict:
    """``intended_ns``: pub_id -> when it was due; ``deliveries``: (pub_id, ts_ns);
    ``queues``: "broker->link" or "broker input" -> [(ts_ns, length)] of every queue."""
    if not intended_ns:
        return Verdict(False, 0.0, 0.0, "", 0, 0.0)
    first, last = min(intended_ns.values()), max(intended_ns.values())
    start = first + int((last - first) * criterion.warmup_fraction)
    deadline = last + int(criterion.slack_s * 1e9)
    due = in_time = 0
    for pub_id, ts in deliveries:
        t = intended_ns.get(pub_id)
        if t is None or not start <= t <= last:
            continue
        due += 1
        in_time += ts <= deadline
    keep_up = in_time / due if due else 1.0
    max_growth, worst, longest = 0.0, "", 0
    for name, samples in queues.items():
        window = [(ts / 1e9, float(n)) for ts, n in samples if start <= ts <= last]
        if not window:
            continue
        top = int(max(n for _, n in window))
        longest = max(longest, top)
        if top <= criterion.queue_floor:
            continue
        s = slope(window)
        if s > max_growth:
            max_growth, worst = s, name
    ok = keep_up >= criterion.keep_up_min and max_growth <= criterion.growth_max
    return Verdict(
        ok, round(keep_up, 4), round(max_growth, 3), worst, longest, round((last - start) / 1e9, 3)
    )


def bisect_rate(search: Search, probe: Callable[[float], bool]) -> tuple[float | None, float | None]:
    """(highest sustainable rate found, lowest unsustainable one); None where the bound was not reached.

    ``probe(rate)`` runs (or recalls) one short run and says whether it was sustainable.
    """
    lo, hi = search.lo, search.hi
    probes = 0
    if not probe(lo):
        return None, lo
    probes += 1
    if probe(hi):
        return hi, None
    probes += 1
    while hi - lo > search.tolerance * lo and probes < search.max_probes:
        mid = round((lo + hi) / 2, 6)
        if probe(mid):
            lo = mid
        else:
            hi = mid
        probes += 1
    return lo, hi


# --- `scotbed saturate`: one search, or two with --versus ---------------------------------


def read_run(run_dir: Path) -> tuple[dict[str, int], list[tuple[str, int]], dict[str, list[tuple[int, int]]]]:
    """Intended times, deliveries and queue samples (input and output) of a run directory (see judge)."""
    intended: dict[str, int] = {}
    pubs = run_dir / contract.PUBLICATIONS
    if pubs.exists():
        for line in pubs.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                intended[rec["pub_id"]] = int(rec["intended_ns"])
    deliveries: list[tuple[str, int]] = []
    queues: dict[str, list[tuple[int, int]]] = {}
    for log in sorted((run_dir / contract.EVENTS_DIR).glob("b-*.jsonl")):
        for line in log.read_text().splitlines():
            if f'"{contract.DELIVER}"' not in line and f'"{contract.QUEUE}"' not in line:
                continue
            e = json.loads(line)
            if e["ev"] == contract.DELIVER:
                deliveries.append((e["pub_id"], int(e["ts_ns"])))
            elif e["ev"] == contract.QUEUE:
                name = f"{e['node']}->{e['link']}" if e.get("link") else f"{e['node']} input"
                queues.setdefault(name, []).append((int(e["ts_ns"]), int(e["len"])))
    return intended, deliveries, queues


def plot(probes: dict[str, dict[str, Any]], out: Path) -> Path:
    """Largest queue growth vs rate, one series per search (sustainable probes filled)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    series: dict[str, list[dict[str, Any]]] = {}
    for rec in probes.values():
        series.setdefault(rec["series"], []).append(rec)
    for name, recs in sorted(series.items()):
        recs.sort(key=lambda r: r["rate"])
        xs = [r["rate"] for r in recs]
        ys = [r["verdict"]["max_growth"] for r in recs]
        line = ax.plot(xs, ys, "-", label=name)[0]
        for r in recs:
            filled = line.get_color() if r["verdict"]["sustainable"] else "white"
            ax.plot(
                r["rate"], r["verdict"]["max_growth"], "o", color=line.get_color(), markerfacecolor=filled
            )
    ax.set_xlabel("rate (the --param value)")
    ax.set_ylabel("largest queue growth (messages/s)")
    ax.set_title("filled: sustainable")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text)


Options = Callable[[Path], Any]
"""runs directory -> the RunOptions of one probe (quiet, no analysis)."""


def search(
    spec: Path,
    sweep: Sweep,
    sets: list[str],
    series: str,
    probes: RecordIndex,
    options: Options,
    say: Callable[[str], None],
) -> tuple[Any, Any]:
    """One bisection of ``sweep.param`` with the extra ``sets``, each probe's verdict told to ``say``;
    returns (sustainable, unsustainable)."""
    from scotbed.orchestrator.run import RunFailed, run_spec

    out_dir, param, criterion = probes.path.parent / "runs", sweep.param, Criterion()

    def probe(rate: float) -> bool:
        key, run_sets = f"{series}|{rate:g}", [*sets, f"{param}={rate:g}"]
        fp = fingerprint(spec, run_sets)  # an edited spec measures again, as in a campaign
        rec = probes.records.get(key)
        if rec is None or rec.get("fingerprint") != fp or not Path(rec["run_dir"]).exists():
            try:
                run_dir, error = run_spec(spec, run_sets, options(out_dir)).run_dir, ""
            except RunFailed as e:  # an overloaded run may miss its drain barrier: not sustainable
                if e.run_dir is None:
                    raise
                run_dir, error = Path(e.run_dir), str(e)
            verdict = judge(*read_run(run_dir), criterion)
            if error:
                verdict = replace(verdict, sustainable=False)
            rec = {"series": series, "rate": rate, "run_dir": str(run_dir), "verdict": verdict.to_json()}
            rec.update(error=error, fingerprint=fp)
            probes.put(key, rec)
        v = Verdict(**rec["verdict"])
        state = "sustainable" if v.sustainable else "NOT sustainable"
        say(
            f"  {series}: {param}={rate:g}: {state} (in time {v.keep_up:.1%}, "
            f"queue growth {v.max_growth:g}/s {v.worst_queue}, longest {v.max_queue})"
            + (f"; the run failed: {rec['error']}" if rec.get("error") else "")
        )
        return v.sustainable

    return bisect_rate(sweep.search, probe)


def _report(series: str, lo: Any, hi: Any, args: Any) -> str:
    if lo is None:
        return f"{series}: not sustainable even at the lower bound {args.param}={hi:g}"
    if hi is None:
        return f"{series}: sustainable up to the upper bound {args.param}={lo:g} (raise --hi)"
    return f"{series}: maximum sustainable {args.param} in [{lo:g}, {hi:g})"


def main(args: Any) -> int:
    from scotbed.experiment.spec import SpecError, load_spec
    from scotbed.orchestrator.commands import CommandError
    from scotbed.orchestrator.outdir import writable_dir
    from scotbed.orchestrator.run import SignalGuard, options_from_args

    if not 0 < args.lo < args.hi:
        raise CommandError(f"saturate: needs 0 < --lo < --hi, got {args.lo} and {args.hi}")
    try:
        spec = load_spec(args.spec, [*args.sets, f"{args.param}={args.lo:g}"])
        for v in args.versus or []:
            load_spec(args.spec, [*args.sets, v])
    except SpecError as e:
        raise CommandError(str(e)) from None
    criterion = Criterion()
    cdir = writable_dir(Path(args.out) / f"{spec.name}-saturate-{_slug(args.param)}")
    probes = RecordIndex(cdir / INDEX, "probes")
    say = _teller(args)
    say(f"criterion: {criterion.describe()}")
    say(f"search: {args.param} in [{args.lo:g}, {args.hi:g}], tolerance {args.tolerance:.0%}, "
        f"at most {args.max_probes} runs per search; probes in {cdir}")  # fmt: skip
    results = {}
    sweep = Sweep(args.param, Search(args.lo, args.hi, args.tolerance, args.max_probes))

    def options(out: Path) -> Any:
        return options_from_args(args, out=out, quiet=True, analyse=False)

    with SignalGuard():  # SIGTERM between two probes stops the search as cleanly as during one
        for series, sets in [("spec", list(args.sets)), *((v, [*args.sets, v]) for v in args.versus or [])]:
            results[series] = search(Path(args.spec), sweep, sets, series, probes, options, say)
    lines = [_report(s, lo, hi, args) for s, (lo, hi) in results.items()]
    base_lo = results["spec"][0]
    for v in args.versus or []:
        other_hi = results[v][1] if results[v][1] is not None else results[v][0]
        if base_lo is not None and other_hi:
            lines.append(
                f"spec sustains >= {base_lo / other_hi:.2f}x the rate of {v} "
                f"(its highest sustainable {base_lo:g} over {v}'s lowest unsustainable {other_hi:g})"
            )
    (cdir / "result.json").write_text(
        json.dumps({"criterion": criterion.describe(), "results": results, "summary": lines}, indent=1)
    )
    drawn = plot(probes.records, cdir / "queue-growth.png")
    if args.log_json:
        emit_json(
            sys.stdout, event="result", summary=lines, result=str(cdir / "result.json"), plot=str(drawn)
        )
        return 0
    for line in [*lines, f"plot: {drawn}"]:
        print(line)
    return 0


def _teller(args: Any) -> Callable[[str], None]:
    """Where the criterion and the probes go: stdout, nowhere (``--quiet``) or JSON lines on stderr."""
    if args.log_json:
        return lambda text: emit_json(event="info", text=text.strip())
    if args.quiet:
        return lambda text: None
    return lambda text: print(text, flush=True)


# --- a campaign whose cells are searches ------------------------------------------------------

PROBES = "probes.json"  # in the campaign directory: every probe of every cell


def sweep_fingerprint(base: Path, sets: tuple[str, ...], sweep: Sweep) -> str:
    """The cell's resolved spec, the search bounds and the criterion: a change to any measures again."""
    what = [fingerprint(base, sets), asdict(sweep), asdict(Criterion())]
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def finished(index: CampaignIndex, key: str, fp: str) -> bool:
    rec = index.cells.get(key) or {}
    return rec.get("status") == "done" and rec.get("fingerprint") == fp and "saturate" in rec


def run_cells(campaign: Campaign, sweep: Sweep, cdir: Path, options: Any, progress: Any) -> int:
    """Search every unfinished cell in sequence; returns how many failed in this call."""
    index = CampaignIndex(cdir / INDEX)
    probes = RecordIndex(cdir / PROBES, "probes")
    cells = campaign.cells()
    failed = 0
    for i, cell in enumerate(cells, 1):
        fp = sweep_fingerprint(campaign.base, cell.sets, sweep)
        if finished(index, cell.key, fp):
            progress.info(f"[{i}/{len(cells)}] {cell.key}: skipped (finished earlier)")
            continue
        progress.info(f"[{i}/{len(cells)}] {cell.key}: searching {sweep.param}")
        t0 = time.monotonic()
        try:
            lo, hi = search(campaign.base, sweep, list(cell.sets), cell.key, probes, options, progress.info)
            status, error = "done", ""
        except Exception as e:  # a failed search is recorded; Ctrl-C (BaseException) stops the campaign
            lo = hi = None
            status, error = "failed", str(e)
            failed += 1
        index.put(
            cell.key,
            {
                "status": status,
                "run_dir": None,
                "seconds": round(time.monotonic() - t0, 1),
                "error": error,
                "values": {**dict(cell.values), "repetition": cell.repetition},
                "fingerprint": fp,
                "saturate": {"param": sweep.param, "sustainable": lo, "unsustainable": hi},
            },
        )
        progress.info(f"[{i}/{len(cells)}] {cell.key}: {status} {sweep.param} in [{lo}, {hi})")
    return failed


def run_sweep(campaign: Campaign, sweep: Sweep, args: Any, progress: Any) -> int:
    """`scotbed campaign` for a file with ``saturate:``: exit 0, 1 when a cell failed, 3 when none ended."""
    from scotbed.analysis.saturation import sweep_report
    from scotbed.orchestrator.outdir import writable_dir
    from scotbed.orchestrator.run import SignalGuard, options_from_args

    cdir = writable_dir(Path(args.out)) / campaign.name
    (cdir / "runs").mkdir(parents=True, exist_ok=True)
    backend = args.backend or campaign.backend

    def options(out: Path) -> Any:
        return options_from_args(args, backend=backend, out=out, quiet=True, analyse=False)

    progress.info(f"criterion: {Criterion().describe()}")
    with SignalGuard():  # SIGTERM between two probes stops the campaign as cleanly as during one
        failed = run_cells(campaign, sweep, cdir, options, progress)
    index = CampaignIndex(cdir / INDEX)
    cells = campaign.cells()
    current = {c.key: sweep_fingerprint(campaign.base, c.sets, sweep) for c in cells}
    done = [index.cells[k] for k, fp in current.items() if finished(index, k, fp)]  # this spec's only
    if not done:
        progress.warn("no cell finished its search")
        return 3
    report = sweep_report(cdir, done, Criterion().describe())
    progress.info(f"campaign directory: {cdir}")
    progress.info(f"report: {report}")
    return 1 if failed else 0
