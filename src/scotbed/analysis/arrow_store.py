"""Parse event logs with Arrow's JSON reader into the Parquet store.

Spark's JSON parse and Parquet write were the largest part of a large analysis (8.5M events: 15.6 s);
Arrow's reader and writer do the same in 7.4-8.0 s on the same two cores. Arrow is strict where Spark is
lenient: a line that is not JSON, a duplicate key, or a value of another type than the schema's (which
Spark reads as a row of nulls, or as the value's text for a string) fails the whole log, and
:func:`scotbed.analysis.store.store_events` parses that log with Spark instead. What Arrow does read,
it reads as Spark would (tested line by line in ``tests/test_arrow_store.py``), so both stores hold
the same rows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

from scotbed.analysis.events import EVENT_FIELDS, PLAIN_COLUMNS

#: Spark SQL's types of the event and publication schemas as Arrow's
ARROW_TYPES = {"BIGINT": pa.int64(), "STRING": pa.string(), "BOOLEAN": pa.bool_(), "DOUBLE": pa.float64()}
SCHEMA = pa.schema([(name, ARROW_TYPES[sql]) for name, sql in EVENT_FIELDS])
_PARSE = pj.ParseOptions(explicit_schema=SCHEMA, unexpected_field_behavior="ignore")
# One thread per log: the logs are parsed side by side, which uses the cores better than Arrow's
# threads within one log.
_READ = pj.ReadOptions(use_threads=False, block_size=1 << 20)
# Rows per Parquet file: Spark packs whole files into its scan's partitions, and a whole log in one
# file left the two cores' partitions unequal in work (a root broker's log holds most of the matching).
FILE_ROWS = 1 << 19
_DICTIONARY = [name for name, _ in EVENT_FIELDS if name not in PLAIN_COLUMNS]


@dataclass(frozen=True)
class Parsed:
    """One log in the store: its lines and the valid events among them (``ts_ns`` and ``ev`` set)."""

    lines: int
    valid: int


def parse_log(log: str, dest: str) -> Parsed | None:
    """Write ``log`` (``.gz`` is decompressed) as uncompressed Parquet files ``dest-NNNN.parquet`` of about
    :data:`FILE_ROWS` rows (a file closes at the end of a read block); None, with every file it wrote
    removed, when Arrow cannot read the log as Spark would."""
    if os.path.getsize(log) == 0:
        return Parsed(0, 0)  # Arrow's reader refuses an empty file; Spark reads no line from it
    lines = valid = 0
    written: list[Path] = []
    group: list[pa.RecordBatch] = []

    def flush() -> None:
        written.append(Path(f"{dest}-{len(written):04d}.parquet"))
        table = pa.Table.from_batches(group, SCHEMA)
        pq.write_table(table, written[-1], compression="none", use_dictionary=_DICTIONARY)
        group.clear()

    try:
        for batch in pj.open_json(log, read_options=_READ, parse_options=_PARSE):
            lines += batch.num_rows
            valid += pc.sum(pc.and_(batch["ts_ns"].is_valid(), batch["ev"].is_valid())).as_py() or 0
            group.append(batch)
            if lines >= FILE_ROWS * (len(written) + 1):  # the log's lines so far fill one more file
                flush()
        if group:
            flush()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        for path in written:
            path.unlink()
        return None
    return Parsed(lines, valid)
