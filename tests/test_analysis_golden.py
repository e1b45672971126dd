"""The summary of a fixed synthesised run is identical, key for key and value for value, to a golden file.

The golden file was written by the analysis before its restructuring for speed (the per-link
``links`` and workload-fidelity ``workload`` sections were added to it when they landed, every other
section unchanged), so a faster job that changes any result fails here. Regenerate it only for an
intended change of results:

    .venv/bin/python tests/test_analysis_golden.py --regenerate
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from scotbed.analysis.synth import SynthSpec, synthesise

pytestmark = [pytest.mark.spark, pytest.mark.slow]

GOLDEN = Path(__file__).parent / "fixtures" / "analysis_summary_golden.json"
RUN_NAME = "golden-20260101T000000-0badc0de"
# A flooded 13-broker tree with a burst, unsubscriptions and three injected faults, so every section
# (traffic overhead, false positives, recovery, offenders) carries non-trivial values.
SPEC = SynthSpec(
    brokers=2,
    fanout=3,
    subscribers=30,
    symbols=8,
    publications=400,
    burst_publications=300,
    unsubscribe_fraction=0.2,
    flooding=True,
    gz=True,
    seed=7,
    stability_window=40,
)
# The only keys that depend on the machine, the Spark build or the wall clock of the analysis.
ENVIRONMENT_KEYS = ("environment",)


def _inject_faults(run: Path) -> None:
    """Drop one receive, duplicate another, and deliver one to a subscriber that did not ask for it."""
    f = sorted((run / "events").glob("worker-*.jsonl*"))[0]
    import gzip

    lines = gzip.decompress(f.read_bytes()).decode().splitlines(keepends=True)
    recv = [i for i, x in enumerate(lines) if '"receive"' in x]
    dropped, dup = json.loads(lines[recv[5]]), lines[recv[9]]
    stranger = dict(dropped, sub_id="s29" if dropped["sub_id"] != "s29" else "s28")
    lines.append(dup)
    lines.append(json.dumps(stranger) + "\n")
    del lines[recv[5]]
    f.write_bytes(gzip.compress("".join(lines).encode(), compresslevel=1, mtime=0))


def make_run(root: Path) -> Path:
    run = root / RUN_NAME
    synthesise(run, SPEC)
    _inject_faults(run)
    return run


def _rounded(value: Any) -> Any:
    """Floats to 12 significant digits: Spark's summation order follows the input files' layout."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def comparable(summary: dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(json.dumps(summary, default=str))
    return {k: _rounded(v) for k, v in doc.items() if k not in ENVIRONMENT_KEYS}


def test_summary_is_identical_to_the_golden_file(spark: Any, tmp_path: Path, run_size: str) -> None:
    """The small-run paths and the large-run paths (``run_size``) both give the golden summary."""
    from scotbed.analysis.api import analyze

    got = comparable(analyze(make_run(tmp_path), spark=spark))
    want = comparable(json.loads(GOLDEN.read_text()))
    assert set(got) == set(want)
    for section in want:
        assert got[section] == want[section], section
    assert got["correctness"]["ok"] is False and got["traffic"]["false_positive"] > 0


def test_a_workload_arrow_does_not_read_gives_the_golden_summary_too(spark: Any, tmp_path: Path) -> None:
    """A null anywhere in the publications file keeps Arrow's parse from being used (it cannot tell a null
    from an absent attribute): Spark parses the workload, and the engine or the decoded attrs match it."""
    from scotbed.analysis.api import analyze
    from scotbed.analysis.pub_arrow import read_publications

    run = make_run(tmp_path)
    pubs = run / "workload" / "publications.jsonl"
    assert read_publications(pubs) is not None
    lines = pubs.read_text().splitlines()
    pubs.write_text("".join(line[:-1] + ', "note": null}\n' for line in lines))
    assert read_publications(pubs) is None
    got = comparable(analyze(run, spark=spark))
    assert got == comparable(json.loads(GOLDEN.read_text()))


WRITTEN_TABLES = ("deliveries", "link_notifications", "link_subscriptions")


def test_a_small_runs_tables_written_by_the_driver_equal_those_spark_writes(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small run's per-delivery and link tables are collected as Arrow and written by the driver; a
    large run's by Spark. Both are directories of part files with the same rows, columns and types."""
    import pandas as pd
    import pyarrow.parquet as pq

    from scotbed.analysis import context, size
    from scotbed.analysis.api import analyze

    tables: dict[str, dict[str, pd.DataFrame]] = {}
    for kind, bound in (("small", 1 << 40), ("large", 0)):
        monkeypatch.setattr(context, "IN_MEMORY_BYTES", bound)
        monkeypatch.setattr(size, "SMALL_RUN_BYTES", bound)
        run = make_run(tmp_path / kind)
        analyze(run, spark=spark)
        tables[kind] = {}
        for name in WRITTEN_TABLES:
            path = run / "analysis" / f"{name}.parquet"
            assert path.is_dir(), (kind, name)
            assert (path / context.SMALL_RUN_PART).exists() == (kind == "small"), (kind, name)  # who wrote it
            table = pq.read_table(path)
            df = table.to_pandas()
            tables[kind][name] = df.sort_values(list(df.columns)).reset_index(drop=True)
            tables[kind][f"{name} schema"] = pd.DataFrame(
                {"name": table.schema.names, "type": [str(t) for t in table.schema.types]}
            )
    for name, small in tables["small"].items():
        assert len(small) > 0, name
        pd.testing.assert_frame_equal(small, tables["large"][name], obj=name)


def test_the_run_size_decides_whether_the_receives_are_collected(
    spark: Any, tmp_path: Path, run_size: str
) -> None:
    """Below the bound every receive is collected once, in receive order (the delays, hops, windows and
    the last receive read those rows); above it none is, and Spark computes them."""
    from scotbed.analysis.context import RunData
    from scotbed.analysis.rundir import RunDir

    run = RunDir.open(make_run(tmp_path))
    run.plots_dir.mkdir(parents=True)
    d = RunData(spark, run)
    try:
        rows = d.receives
        if run_size == "uncollected":
            assert rows is None
        else:
            assert rows is not None and len(rows) == d.deliveries.count() > 0
            assert rows["recv_ns"].is_monotonic_increasing
            assert d.last_receive_ns == int(rows["recv_ns"].iloc[-1])
            assert int(d.hops["count"].sum()) == int(rows["hops"].notna().sum())
    finally:
        d.close()


if __name__ == "__main__" and sys.argv[1:] == ["--regenerate"]:
    import tempfile

    from scotbed.analysis.api import analyze
    from scotbed.analysis.session import get_session

    session = get_session("local[2]", app_name="scotbed-golden", shuffle_partitions=4)
    with tempfile.TemporaryDirectory() as tmp:
        doc = comparable(analyze(make_run(Path(tmp)), spark=session))
    session.stop()
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
