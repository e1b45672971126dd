"""Arrow's store holds exactly the rows Spark's parse gives, and refuses what it cannot read as Spark
would (real Spark)."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pyarrow.json as pj
import pytest

from scotbed.analysis import arrow_store
from scotbed.analysis.arrow_store import Parsed, parse_log
from scotbed.analysis.events import EVENT_DDL
from scotbed.analysis.store import parse_in_tasks, parse_logs, store_events

pytestmark = [pytest.mark.spark]

EV = '{"ts_ns":1,"ev":"a","node":"b1"}\n'
# Lines Arrow reads as Spark does: each log's rows must be Spark's.
READ = {
    "blank line": EV + "\n" + '{"ts_ns":2,"ev":"b"}\n',
    "no ev": EV + '{"ts_ns":2}\n',
    "int for a double": '{"ts_ns":1,"ev":"a","us":5}\n',
    "unknown field": '{"ts_ns":1,"ev":"a","zzz":[1,{"y":2}]}\n',
    "null": '{"ts_ns":1,"ev":"a","us":null,"node":null}\n',
    "crlf": EV.replace("\n", "\r\n") * 2,
    "no final newline": EV + '{"ts_ns":2,"ev":"b","hops":3,"dynamic":true}',
}
# Lines Spark reads leniently (a row of nulls, a value's text, the last duplicate): Arrow must refuse them.
REFUSED = {
    "cut line": EV + '{"ts_ns":2,"ev":"b","no\n',
    "float for a bigint": '{"ts_ns":1.5,"ev":"a"}\n',
    "string for a bigint": '{"ts_ns":"1","ev":"a"}\n',
    "number for a string": '{"ts_ns":1,"ev":"a","node":5}\n',
    "object for a string": '{"ts_ns":1,"ev":"a","node":{"x":1}}\n',
    "duplicate key": '{"ts_ns":1,"ev":"a","ev":"b"}\n',
    "array line": '[1,2]\n{"ts_ns":2,"ev":"b"}\n',
    "number for a boolean": '{"ts_ns":1,"ev":"a","dynamic":1}\n',
    "double overflow": '{"ts_ns":1,"ev":"a","us":1e400}\n',
}


def _spark_rows(spark: Any, paths: list[str]) -> list[tuple[Any, ...]]:
    return sorted(map(tuple, spark.read.schema(EVENT_DDL).json(paths).collect()), key=repr)


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(map(tuple, df.collect()), key=repr)


@pytest.mark.parametrize("case", sorted(READ))
def test_arrow_reads_these_lines_as_spark_does(spark: Any, tmp_path: Path, case: str) -> None:
    log = tmp_path / "b1.jsonl"
    log.write_text(READ[case])
    (tmp_path / "store").mkdir()
    got = parse_log(str(log), str(tmp_path / "store" / "log"))
    assert got is not None
    stored = spark.read.schema(EVENT_DDL).parquet(str(tmp_path / "store"))
    assert _rows(stored) == _spark_rows(spark, [str(log)])
    assert (got.lines, got.valid) == (
        stored.count(),
        stored.where("ts_ns IS NOT NULL AND ev IS NOT NULL").count(),
    )


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_arrow_refuses_what_spark_reads_leniently_and_removes_the_files_it_wrote(
    tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file per line, so the good lines before the refused one are written, then removed."""
    monkeypatch.setattr(arrow_store, "FILE_ROWS", 1)
    monkeypatch.setattr(
        arrow_store, "_READ", pj.ReadOptions(use_threads=False, block_size=48)
    )  # a line a block
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text(EV * 3)
    bad.write_text(EV * 3 + REFUSED[case])
    for name in ("good", "bad"):
        (tmp_path / name / "store").mkdir(parents=True)
    assert parse_log(str(good), str(tmp_path / "good" / "store" / "log")) == Parsed(3, 3)
    assert len(list((tmp_path / "good" / "store").iterdir())) == 3
    assert parse_log(str(bad), str(tmp_path / "bad" / "store" / "log")) is None
    assert list((tmp_path / "bad" / "store").iterdir()) == []


def test_the_store_mixes_arrow_and_spark_logs_into_sparks_rows_and_counts(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Good logs (one cut into files, one gzipped, one empty) go through Arrow, the others through Spark;
    the store's rows and (valid, lines) are those of Spark's parse of every log."""
    monkeypatch.setattr(arrow_store, "FILE_ROWS", 4)
    monkeypatch.setattr(
        arrow_store, "_READ", pj.ReadOptions(use_threads=False, block_size=48)
    )  # a line a block
    logs = tmp_path / "events"
    logs.mkdir()
    paths = []
    for name, text in [("long", "".join(EV.replace(":1,", f":{k},") for k in range(1, 11))), *READ.items()]:
        paths.append(logs / f"{name.replace(' ', '-')}.jsonl")
        paths[-1].write_text(text)
    zipped = logs / "zipped.jsonl.gz"
    with gzip.open(zipped, "wt") as f:
        f.write(EV * 3)
    (logs / "empty.jsonl").write_text("")
    for name, text in REFUSED.items():
        (logs / f"refused-{name.replace(' ', '-')}.jsonl").write_text(text)
    every = sorted(str(p) for p in logs.iterdir())

    store = store_events(spark, every, tmp_path / "store")

    assert _rows(store.lines) == _spark_rows(spark, every)
    expected = spark.read.schema(EVENT_DDL).json(every)
    assert store.counts() == (
        expected.where("ts_ns IS NOT NULL AND ev IS NOT NULL").count(),
        expected.count(),
    )
    long_files = sorted(
        p.name
        for p in (tmp_path / "store" / "arrow").glob(f"log-{every.index(str(logs / 'long.jsonl')):05d}-*")
    )
    assert len(long_files) == 3  # 10 rows in files of 4
    assert (
        store.counted.lines
        == sum(len([ln for ln in t.splitlines() if ln.strip()]) for t in READ.values()) + 13
    )
    assert store.uncounted is not None and store.uncounted.count() == expected.count() - store.counted.lines


def test_a_small_runs_store_is_sparks_memory_cache_counted_by_one_query(spark: Any, tmp_path: Path) -> None:
    log = tmp_path / "b1.jsonl"
    log.write_text(EV * 2 + REFUSED["cut line"])
    store = store_events(spark, [str(log)], tmp_path / "store", in_memory=True)
    assert store.counted == Parsed(0, 0)
    assert store.counts() == (3, 4)
    assert store.lines.is_cached
    store.lines.unpersist()


def test_spark_tasks_parse_the_logs_as_the_drivers_threads_do(spark: Any, tmp_path: Path) -> None:
    """A cluster's executors parse the logs in tasks (:func:`parse_in_tasks`): the same files and counts."""
    logs = []
    for name, text in {**READ, **REFUSED}.items():
        logs.append(tmp_path / f"{name.replace(' ', '-')}.jsonl")
        logs[-1].write_text(text)
    got = {}
    for way, parse in (("threads", parse_logs), ("tasks", parse_in_tasks)):
        (tmp_path / way).mkdir()
        parsed = parse(spark, [str(p) for p in logs], [str(tmp_path / way / p.stem) for p in logs])
        files = sorted(p.name for p in (tmp_path / way).iterdir())
        got[way] = (parsed, files, _rows(spark.read.schema(EVENT_DDL).parquet(str(tmp_path / way))))
    assert got["tasks"] == got["threads"]
    assert [p is None for p in got["tasks"][0]] == [False] * len(READ) + [True] * len(REFUSED)
