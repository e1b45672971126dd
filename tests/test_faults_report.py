"""The report's verdict is the summary's: losses inside declared fault windows are excused in both.

A synthesised run (correct by construction) loses deliveries of chosen publications; ``faults.jsonl``
declares a window around some of them. The analysis attributes the losses before it writes
``summary.json`` and renders ``report.html``, so the two can never disagree.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from scotbed import contract
from scotbed.analysis.summary import verdict_of_json
from scotbed.analysis.synth import SynthSpec, synthesise

pytestmark = pytest.mark.spark

SPEC = SynthSpec(publications=120, subscribers=12, rate_per_s=20.0, publishers=2)
INSIDE, OUTSIDE = 20, 100  # publication indexes: 1 s and 5 s into the publications, window at the first


def _lose(run: Path, k: int) -> int:
    """Delete every receive of the ``k``-th publication; returns how many deliveries were lost."""
    pubs = [json.loads(x) for x in (run / contract.PUBLICATIONS).read_text().splitlines()]
    pub_id = sorted(pubs, key=lambda p: p["intended_ns"])[k]["pub_id"]
    lost = 0
    for f in sorted((run / "events").glob("worker-*.jsonl")):
        lines = f.read_text().splitlines(keepends=True)
        keep = [x for x in lines if not ('"receive"' in x and json.loads(x)["pub_id"] == pub_id)]
        lost += len(lines) - len(keep)
        f.write_text("".join(keep))
    return lost


def _window_at(run: Path, k: int) -> None:
    pubs = sorted(
        (json.loads(x) for x in (run / contract.PUBLICATIONS).read_text().splitlines()),
        key=lambda p: p["intended_ns"],
    )
    t = int(pubs[k]["intended_ns"])
    rows = [
        {"action": "kill", "target": "b-v2-0", "at_s": 0.0, "start_ns": t, "end_ns": t},
        {"action": "restart", "target": "b-v2-0", "at_s": 0.1, "start_ns": t, "end_ns": t},
    ]
    (run / contract.FAULTS).write_text("".join(json.dumps(r) + "\n" for r in rows))


def _report_verdict(run: Path) -> tuple[str, str]:
    page = (run / contract.REPORT).read_text()
    m = re.search(r'<div id="verdict" class="verdict (\w+)">(.*?)</div>', page, re.S)
    assert m is not None
    return m.group(1), " ".join(html.unescape(m.group(2)).split())


@pytest.mark.slow
@pytest.mark.parametrize("outside", [False, True])
def test_the_report_verdict_matches_the_summary_with_losses_inside_fault_windows(
    spark: Any, tmp_path: Path, outside: bool
) -> None:
    from scotbed.analysis.api import analyze

    run = tmp_path / "synth-20260101T000000-0123abcd"
    synthesise(run, SPEC)
    inside = _lose(run, INSIDE)
    lost_outside = _lose(run, OUTSIDE) if outside else 0
    assert inside > 0 and (lost_outside > 0) == outside
    _window_at(run, INSIDE)
    returned = analyze(run, spark=spark)
    summary = json.loads((run / contract.SUMMARY).read_text())
    assert summary == json.loads(json.dumps(returned, default=str))
    n = summary["notifications"]
    assert (n["missing_in_fault_windows"], n["missing"]) == (inside, lost_outside)
    ok, text = verdict_of_json(summary)
    assert ok is (not outside) and summary["correctness"]["ok"] is ok
    css, line = _report_verdict(run)
    assert css == ("ok" if ok else "fail")
    assert line.endswith(text.split(": ", 1)[1]), (line, text)
    assert line.startswith("CORRECT" if ok else "INCORRECT") and f"{inside} lost inside fault windows" in line
