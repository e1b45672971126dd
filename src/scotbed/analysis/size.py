"""Whether a run is small, which decides how it is analysed.

A small run (a demo writes about 5 MB of event text) is almost all fixed cost on a cold JVM: its
sections may collect their per-delivery or per-subscription rows to pandas once and compute there.
The golden test checks both paths give the same summary.
"""

from __future__ import annotations

from scotbed.analysis.rundir import RunDir

SMALL_RUN_BYTES = 64 << 20  # of event text


def is_small(run: RunDir) -> bool:
    return run.event_text_bytes() < SMALL_RUN_BYTES
