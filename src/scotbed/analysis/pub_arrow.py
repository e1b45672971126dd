"""The workload's publications parsed once by Arrow's JSON reader: their columns and their attrs.

An analysis read ``workload/publications.jsonl`` three times over: for the publication times (Spark),
the oracle's matching (every line's attrs decoded by Python's ``json``) and the realised
selectivity (decoded again). Arrow parses the file once, in C++, into the columns Spark's schema
reads (:data:`COLUMNS`) and a column per attribute; the oracle and the selectivity then match every
filter over those columns, as :meth:`scotbed.matching.columnar.Columns.of` would over the decoded
dicts. Where Arrow's parse cannot tell what Spark or the dicts would hold, it is not used (None) and
the callers parse the file as before:

- a line Arrow refuses: not JSON, a duplicate key, a value of another type than :data:`COLUMNS`'
  (Spark reads a number as a string's text), an attribute of two kinds across lines;
- an explicit ``null`` (Arrow reads it as an absent attribute): any ``null`` in the text refuses;
- an attribute that is neither a string nor a number (Arrow infers timestamps from ISO strings too);
- a number of 2**53 or more in magnitude, which Arrow may have turned from an integer into a float;
- a string with a NUL, which numpy's strings drop; a line without ``attrs`` or with another value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from scotbed.analysis.arrow_store import ARROW_TYPES
from scotbed.analysis.events import PUBLICATION_FIELDS
from scotbed.matching.columnar import EXACT_INT, Column, Columns

_FIELDS = [(name, sql) for name, sql in PUBLICATION_FIELDS if name != "attrs"]
#: the publication columns besides ``attrs``, typed as Spark's schema types them
COLUMNS = pa.schema([(name, ARROW_TYPES[sql]) for name, sql in _FIELDS])
COLUMNS_DDL = ", ".join(f"{name} {sql}" for name, sql in _FIELDS)
_PARSE = pj.ParseOptions(explicit_schema=COLUMNS, unexpected_field_behavior="infer")
_NUMBERS = (pa.int64(), pa.float64())  # JSON's numbers as Arrow infers them


@dataclass(frozen=True)
class Publications:
    """Every line of the publications file: its :data:`COLUMNS` and its attrs, row for row."""

    table: pa.Table
    attrs: Columns


def read_publications(path: Path) -> Publications | None:
    """The publications file ``path`` parsed by Arrow, or None (see above)."""
    return parse_publications(path.read_bytes())


def parse_publications(text: bytes) -> Publications | None:
    """Every JSON line of ``text`` as :class:`Publications`, or None (see above)."""
    if b"null" in text:
        return None
    try:
        table = pj.read_json(pa.BufferReader(text), parse_options=_PARSE)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if "attrs" not in table.column_names:
        return None
    attrs = table.column("attrs").combine_chunks()
    if not pa.types.is_struct(attrs.type) or attrs.null_count:
        return None
    cols = columns_of(attrs)
    return None if cols is None else Publications(table.select(COLUMNS.names), cols)


def columns_of(attrs: pa.StructArray) -> Columns | None:
    """One :class:`Column` per field of ``attrs`` (a null is an absent attribute); None when a field
    holds anything but exact numbers or strings without a NUL."""
    cols = {}
    for field, values in zip(attrs.type, attrs.flatten(), strict=True):
        col = _column(values)
        if col is None:
            return None
        cols[field.name] = col
    return Columns(len(attrs), cols)


def _column(values: pa.Array) -> Column | None:
    n = len(values)
    present = values.is_valid().to_numpy(zero_copy_only=False)
    absent = np.zeros(n, dtype=bool)
    if values.type in _NUMBERS:
        raw = values.fill_null(0).to_numpy()
        if not ((raw > -EXACT_INT) & (raw < EXACT_INT)).all():  # NaN and the infinities fail too
            return None
        numbers = np.where(present, raw.astype(np.float64), np.nan)
        return Column(present, present, absent, numbers, np.full(n, "", dtype=str))
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        if pc.any(pc.match_substring(values, "\x00")).as_py():
            return None
        strings = values.fill_null("").to_numpy(zero_copy_only=False).astype(str)
        return Column(present, absent, present, np.full(n, np.nan), strings)
    return None
