"""Analysis throughput against a raw Spark pass over the same event logs, in one session.

    .venv/bin/python benchmarks/analysis_scale.py --events 1000000 10000000 [--master local[*]]

Per size it synthesises contract-format event logs of about N events, then times, in one process and
SparkSession on the JVM ``scotbed analyze`` starts for that run (each size in a process of its own): a
*raw pass* (read the logs with the event schema, one group-by, collect: the least
any analysis must do; it parses only ``ev``, so the same pass over every column is printed too, as
``raw_all_columns_s``, but is not the baseline) and the full analysis (the job ``scotbed analyze``
runs), and prints one JSON line with both times (wall and CPU seconds), their ratios and the
analysis's events/s. The raw pass runs before and after the analysis and the faster of the two is
the baseline (so a warm JVM favours the baseline, never the analysis). The baseline runs on the run's
JVM too: on the short-lived one (C1 only, up to :data:`~scotbed.analysis.size.SHORT_JVM_BYTES`) Spark's
JSON parse is about twice as slow, so compare the analysis's seconds across JVMs, not its ratios
(``java`` says which ran). On a shared machine the CPU ratio is the fairer one. The synthesised run is
correct by construction, so ``ok`` must be true.
``--workdir DIR --keep`` keeps the runs, and a later call with the same DIR reuses them.
``--profile`` adds, per analysis, one JSON line of each section's wall and CPU seconds and its Spark jobs
(``load`` is the parse of the logs, before the first section).
``--conf KEY=VALUE`` sets a Spark SQL conf in the session before anything runs (to try one).
``--repeat K`` analyses each run K times in the same session (one line each, ``analysis`` = 1..K):
the first pays the JVM's warm-up (code generation, JIT) for every query; the later ones are what
each further run of a campaign costs, since a campaign analyses all its runs in one session.
``--cold RUN_DIR`` times what ``scotbed analyze RUN_DIR`` costs from nothing (e.g. ``make demo``'s run):
``analyze`` with its own session (the JVM's start, the imports beside it, the analysis, the stop), wall
and CPU, no raw pass before it to warm the JVM.
``--java-option OPT`` (repeatable; ``none`` for no option) replaces the options the JVM starts with (by
default those of the JVM :func:`scotbed.analysis.api.jvm_for` picks for the run, as ``scotbed analyze``
does) to try one; the class archive is mapped either way. Set JAVA_HOME to try another JDK.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from scotbed.analysis.rundir import RunDir
from scotbed.analysis.synth import SCALE, SynthSpec, synthesise


def spec_for(events: int) -> SynthSpec:
    """:data:`~scotbed.analysis.synth.SCALE` sized by a pilot run's events per publication."""
    with tempfile.TemporaryDirectory() as tmp:
        pilot = synthesise(Path(tmp) / "pilot", replace(SCALE, publications=2000))
    per_pub = pilot["events"] / 2000
    return replace(SCALE, publications=max(100, int(events / per_pub)))


class Clock:
    """Wall seconds and CPU seconds of this process, the Spark JVM and its Python workers.

    On a machine shared with other work, CPU seconds are the fairer measure: wall time also
    counts the time other processes held the cores.
    """

    def __init__(self, spark: Any) -> None:
        import psutil

        self.procs = [psutil.Process(), psutil.Process(spark.sparkContext._gateway.proc.pid)]

    def cpu(self) -> float:
        import psutil

        total = 0.0
        for p in self.procs:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        for c in self.procs[1].children(recursive=True):
            try:
                t = c.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                continue
        return total

    def time(self, f: Any) -> tuple[Any, float, float]:
        """(f's result, wall s, CPU s)."""
        c0, t0 = self.cpu(), time.monotonic()
        out = f()
        return out, time.monotonic() - t0, self.cpu() - c0


def raw_pass(spark: Any, files: list[str]) -> None:
    """Read every event line with the event schema, group by event name and collect."""
    from scotbed.analysis.events import EVENT_DDL

    spark.read.schema(EVENT_DDL).json(files).groupBy("ev").count().collect()


def raw_pass_all_columns(spark: Any, files: list[str]) -> None:
    """The raw pass that parses every column of the event schema (the one above reads only ``ev``:
    Spark's JSON reader prunes columns); printed beside it, never the baseline of the ratios."""
    from pyspark.sql import functions as F

    from scotbed.analysis.events import EVENT_DDL, EVENT_FIELDS

    spark.read.schema(EVENT_DDL).json(files).agg(*[F.count(n) for n, _ in EVENT_FIELDS]).collect()


def prepare(run: Path, n: int) -> tuple[int, float]:
    """(events, synthesis seconds); a run left by an earlier ``--keep`` is reused as it is."""
    done = run / "synth.json"
    if done.exists():
        return int(json.loads(done.read_text())["events"]), 0.0
    shutil.rmtree(run, ignore_errors=True)
    t0 = time.monotonic()
    made = synthesise(run, spec_for(n))
    t_synth = time.monotonic() - t0
    done.write_text(json.dumps({"events": made["events"]}))
    return int(made["events"]), t_synth


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=float, nargs="+", default=[1e6])
    ap.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    ap.add_argument("--workdir", default=None, help="where to write the runs (default: a temp dir, removed)")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--keep", action="store_true", help="keep the synthesised runs")
    ap.add_argument("--repeat", type=int, default=1, help="analyses of each run in the session")
    ap.add_argument("--profile", action="store_true", help="per section: wall, CPU and Spark jobs")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark SQL conf")
    ap.add_argument("--cold", default=None, metavar="RUN_DIR", help="session start + one analysis of a run")
    ap.add_argument("--java-option", action="append", default=None, help="the local JVM's options")
    args = ap.parse_args()
    os.environ.setdefault("SCOTBED_SPARK_DRIVER_MEMORY", args.driver_memory)
    options = None if args.java_option is None else [o for o in args.java_option if o != "none"]
    if args.cold:
        if args.conf:
            ap.error("--conf sets the sizes' session; --cold times the analysis's own")
        print(json.dumps(cold(Path(args.cold), args.master, options)))
        return 0

    if len(args.events) > 1:  # a process, so a JVM, per size: PySpark keeps one JVM per process
        for n in args.events:
            subprocess.run(
                [sys.executable, __file__, *_argv_without_events(sys.argv[1:]), "--events", str(n)],
                check=True,
            )
        return 0
    root = Path(args.workdir or tempfile.mkdtemp(prefix="scotbed-bench-"))
    try:
        run = root / f"bench-{int(args.events[0])}"
        measure(run, args, options)
        if not args.keep:
            shutil.rmtree(run, ignore_errors=True)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


def _argv_without_events(argv: list[str]) -> list[str]:
    """``argv`` less ``--events`` and its numbers."""
    out: list[str] = []
    in_events = False
    for arg in argv:
        if arg == "--events":
            in_events = True
            continue
        if in_events:
            try:
                float(arg)
                continue
            except ValueError:
                in_events = False
        out.append(arg)
    return out


def measure(run: Path, args: argparse.Namespace, options: list[str] | None) -> None:
    """Synthesise ``run`` (or reuse it), then time the raw passes and ``args.repeat`` analyses of it in one
    session on the JVM ``scotbed analyze`` starts for it (:func:`~scotbed.analysis.api.jvm_for`)."""
    from scotbed.analysis.api import analyze, jvm_for
    from scotbed.analysis.session import get_session

    events, t_synth = prepare(run, int(args.events[0]))
    jvm = jvm_for(RunDir.open(run))
    if options is not None:
        jvm = replace(jvm, options=tuple(options))
    spark = get_session(args.master, app_name="scotbed-analysis-scale", jvm=jvm)
    for kv in args.conf:
        spark.conf.set(*kv.split("=", 1))
    clock = Clock(spark)
    profile: list[dict[str, Any]] = []
    if args.profile:
        profile_sections(spark, clock, profile)
    try:
        files = RunDir.open(run).event_files()
        _, raw_w1, raw_c1 = clock.time(lambda: raw_pass(spark, files))
        timed = [clock.time(lambda: analyze(run, spark=spark)) for _ in range(args.repeat)]
        _, raw_w2, raw_c2 = clock.time(lambda: raw_pass(spark, files))
        _, all_w, all_c = clock.time(lambda: raw_pass_all_columns(spark, files))
        raw, raw_c = min(raw_w1, raw_w2), min(raw_c1, raw_c2)
        for k, (summary, t_an, c_an) in enumerate(timed, 1):
            got = line(k, events, files, t_synth, (raw, raw_c), (t_an, c_an), summary, spark)
            every = {"raw_all_columns_s": round(all_w, 2), "raw_all_columns_cpu_s": round(all_c, 2)}
            print(json.dumps({**got, **every, "java": _java(spark), "conf": args.conf}), flush=True)
        for k, p in enumerate(profile, 1):
            print(json.dumps({"analysis": k, "events": events, "profile": p}), flush=True)
    finally:
        spark.stop()


def _java(spark: Any) -> str:
    """The JVM's release, and its C1-only option when it has it (the short-lived JVM)."""
    jvm = spark.sparkContext._jvm
    args = [
        a
        for a in jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
        if a.startswith("-XX:TieredStopAtLevel")
    ]
    return " ".join([str(jvm.java.lang.System.getProperty("java.version")), *args])


def cold(run: Path, master: str | None, java_options: list[str] | None) -> dict[str, Any]:
    """Wall and CPU seconds of ``analyze(run)`` from nothing, as ``scotbed analyze`` runs it: the JVM's
    start (with ``java_options`` in place of its own, if given), the analysis's imports beside it, the
    analysis and the session's stop. This process has imported only the light API."""
    import psutil

    from scotbed.analysis.api import analyze, jvm_for
    from scotbed.analysis.session import SPARK_JVM_CLASS

    jvm = jvm_for(RunDir.open(run))
    if java_options is not None:
        jvm = replace(jvm, options=tuple(java_options))
    me = psutil.Process()
    c0, t0 = sum(me.cpu_times()[:4]), time.monotonic()
    summary = analyze(run, master, jvm=jvm)
    wall = time.monotonic() - t0
    jvms = [c for c in me.children() if SPARK_JVM_CLASS in c.cmdline()]  # stopped, still running
    cpu = sum(me.cpu_times()[:4]) - c0 + sum(sum(p.cpu_times()[:4]) for p in jvms)
    stages = summary["environment"]["stages_s"]
    return {
        "run": run.name,
        "events": summary["events"]["total"],
        "java": summary["environment"]["java"],
        "java_options": list(jvm.options),
        "session_s": stages["session"],
        "total_s": round(wall, 2),
        "total_cpu_s": round(cpu, 2),
        "stages_s": stages,
        "ok": summary["correctness"]["ok"],
        "load_avg_1m": round(os.getloadavg()[0], 1),
    }


def profile_sections(spark: Any, clock: Clock, out: list[dict[str, Any]]) -> None:
    """Time every section of each analysis, and each shared input of :class:`RunData` where it is first
    computed (``parse`` is the parse of the logs; an input's time is also inside its section's): wall s,
    CPU s and its own Spark jobs (an input's jobs are not its section's). Each analysis appends one
    dict, name -> [wall, cpu, jobs], to ``out``.
    """
    from scotbed.analysis import context, pipeline

    sc = spark.sparkContext

    def timed(name: str, f: Any) -> Any:
        def run(d: Any) -> Any:
            if name == pipeline.PARSE_STAGE:
                out.append({})
            group, outer = f"profile-{len(out)}-{name}", sc.getLocalProperty("spark.jobGroup.id")
            sc.setJobGroup(group, name)
            got, wall, cpu = clock.time(lambda: f(d))
            if outer:
                sc.setJobGroup(outer, outer)
            out[-1][name] = [round(wall, 3), round(cpu, 3), len(sc.statusTracker().getJobIdsForGroup(group))]
            return got

        return run

    for attr, prop in list(vars(context.RunData).items()):
        if isinstance(prop, context.shared_input):
            name = pipeline.PARSE_STAGE if attr == "stored" else f"({attr})"
            prop.compute = timed(name, prop.compute)
    pipeline.SECTION_THREADS = 1  # one section at a time, so each one's wall and CPU seconds are its own
    pipeline.SECTIONS = tuple((n, timed(n, f)) for n, f in pipeline.SECTIONS)  # type: ignore[assignment]


def line(
    k: int,
    events: int,
    files: list[str],
    t_synth: float,
    raw: tuple[float, float],
    an: tuple[float, float],
    summary: dict[str, Any],
    spark: Any,
) -> dict[str, Any]:
    """The printed figures of the k-th analysis of one run: (wall, CPU) of the raw pass and of it."""
    (raw_w, raw_c), (t_an, c_an) = raw, an
    return {
        "analysis": k,
        "events": events,
        "bytes": sum(Path(f).stat().st_size for f in files),
        "synth_s": round(t_synth, 1),
        "raw_pass_s": round(raw_w, 2),
        "analysis_s": round(t_an, 2),
        "ratio": round(t_an / raw_w, 2),
        "raw_pass_cpu_s": round(raw_c, 2),
        "analysis_cpu_s": round(c_an, 2),
        "cpu_ratio": round(c_an / raw_c, 2),
        "events_per_s": round(events / t_an),
        "stages_s": summary["environment"].get("stages_s"),
        "ok": summary["correctness"]["ok"],
        "master": spark.sparkContext.master,
        "cores": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 1),
    }


if __name__ == "__main__":
    raise SystemExit(main())
