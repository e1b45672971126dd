"""``scotbed saturate SPEC --param workload.rate_per_minute [--lo --hi]``: the maximum sustainable rate.

Bisection over short runs (no Spark analysis: the verdict comes from the raw event logs) with the
criterion of :mod:`scotbed.orchestrator.saturation`. Every probe is recorded in
``OUT/<name>-saturate/index.json`` as soon as it ends, so running the same command again resumes: the
bisection asks for the same rates and recalls the ones already measured. ``--versus KEY=VALUE`` runs a
second search with that override (e.g. ``routing=flooding``) and reports the ratio of the two rates.
The plot ``queue-growth.png`` shows the largest output-queue growth against the rate of every probe.
What it finds goes to stdout (with ``--log-json`` as one ``result`` JSON line, the criterion and the
probes as JSON lines on stderr; with ``--quiet`` only the results).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.orchestrator.campaign import INDEX, RecordIndex, fingerprint
from scotbed.orchestrator.saturation import Criterion, Search, Sweep, Verdict, bisect_rate, judge
from scotbed.terminal import emit_json


def read_run(run_dir: Path) -> tuple[dict[str, int], list[tuple[str, int]], dict[str, list[tuple[int, int]]]]:
    """Intended times, deliveries and output-queue samples of a run directory (see judge)."""
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
            elif e["ev"] == contract.QUEUE and e.get("link"):
                queues.setdefault(f"{e['node']}->{e['link']}", []).append((int(e["ts_ns"]), int(e["len"])))
    return intended, deliveries, queues


def plot(probes: dict[str, dict[str, Any]], out: Path) -> Path:
    """Largest output-queue growth vs rate, one series per search (sustainable probes filled)."""
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
    ax.set_ylabel("largest output-queue growth (envelopes/s)")
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
