"""The reports' figures read as a person expects: counts as integers, others rounded, none as "—"."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from scotbed.analysis.report import BLANK_NOTE, fmt_number, table_html


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (112.0, "112"),
        (7, "7"),
        (15.602945040948274, "15.6"),
        (0.1875, "0.1875"),
        (123456.7, "123457"),
        (math.nan, "—"),
        (None, "—"),
        ("b-a-0", "b-a-0"),
        (True, "True"),
    ],
)
def test_fmt_number(value: object, shown: str) -> None:
    assert fmt_number(value) == shown


def test_a_table_shows_counts_as_integers_and_explains_its_blanks() -> None:
    df = pd.DataFrame({"node": ["b-a-1", "b-b-0"], "ims": [math.nan, 7.0], "mean_us": [51.26234, 33.1]})
    html = str(table_html(df))
    assert "<td>7</td>" in html and "<td>—</td>" in html and "<td>51.26</td>" in html
    assert "NaN" not in html and "7.000" not in html and BLANK_NOTE in html
    assert BLANK_NOTE not in str(table_html(df.dropna()))
