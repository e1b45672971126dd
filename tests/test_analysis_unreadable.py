"""An unreadable client `receive` line is named and not counted as a missing delivery (real Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scotbed.analysis.synth import SynthSpec, synthesise
from scotbed.analysis.unreadable import describe

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _garble_one_receive(run: Path) -> str:
    for f in sorted((run / "events").glob("*.jsonl")):
        lines = f.read_text().splitlines(keepends=True)
        for k, line in enumerate(lines):
            if '"ev":"receive"' in line.replace(" ", ""):
                value = line.index('"', line.index('"sub_id"') + len('"sub_id"') + 1)  # its opening quote
                cut = line[
                    : line.index('"', value + 1) + 1
                ]  # up to the sub_id value: the object never closes
                assert '"pub_id"' in cut
                lines[k] = cut + "\x00\n"
                f.write_text("".join(lines))
                return cut
    raise AssertionError("no receive line in the synthesised run")


def test_an_unreadable_receive_line_is_named_and_not_missing(
    spark: Any, tmp_path: Path, run_size: str
) -> None:
    """In memory or in Parquet, the store keeps no line's text: the cut line is read again."""
    from scotbed.analysis.api import analyze

    run = tmp_path / "run"
    synthesise(run, SynthSpec(publications=60, subscribers=6, flooding=True))
    garbled = _garble_one_receive(run)
    summary = analyze(run, spark=spark)
    c, n = summary["correctness"], summary["notifications"]
    assert summary["events"]["unreadable_receive"]["count"] == 1
    assert c["unreadable_receives"] == 1 and c["missing"] == 0 and c["ok"] is True
    assert n["missing"] == 0 and n["delivered"] == n["expected_deliveries"] - 1
    note = describe(summary)
    assert note is not None and note.startswith("1 client receive line(s) could not be read (1 expected")
    assert garbled[:60] in note
