"""Whether a run is small, which decides how it is analysed; light, so the JVM can start before the
analysis's code is imported.

A small run (a demo writes about 5 MB of event text) is almost all fixed cost on a cold JVM: its
sections may collect their per-delivery or per-subscription rows to pandas once and compute there
(every further Spark query costs its code generation and JIT, about 0.5 s each, while the rows cost
little), its queries are interpreted (:data:`~scotbed.analysis.session.SMALL_RUN_CONF`) and its JVM is
short-lived (:data:`~scotbed.analysis.session.SHORT_JVM`). The golden test checks both paths give the
same summary.
"""

from __future__ import annotations

from scotbed.analysis.rundir import RunDir

SMALL_RUN_BYTES = 64 << 20  # of event text


def is_small(run: RunDir) -> bool:
    return run.event_text_bytes() < SMALL_RUN_BYTES
