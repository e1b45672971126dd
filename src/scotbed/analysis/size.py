"""Whether a run is small, which decides how it is analysed; light, so the JVM can start before the
analysis's code is imported.

A small run (a demo writes about 5 MB of event text) is almost all fixed cost on a cold JVM: its
sections may collect their per-delivery or per-subscription rows to pandas once and compute there
(every further Spark query costs its code generation and JIT, about 0.5 s each, while the rows cost
little) and its queries are interpreted (:data:`~scotbed.analysis.session.SMALL_RUN_CONF`). The golden
test checks both paths give the same summary. A small run's JVM is short-lived
(:data:`~scotbed.analysis.session.SHORT_JVM`), and so is that of a run up to :data:`SHORT_JVM_BYTES`.
"""

from __future__ import annotations

from scotbed.analysis.rundir import RunDir

SMALL_RUN_BYTES = 64 << 20  # of event text
# Up to here a run is analysed on the short-lived JVM (C1 only) too: a single analysis never repays C2's
# compile time (figures: benchmarks/README.md).
SHORT_JVM_BYTES = 128 << 20


def is_small(run: RunDir) -> bool:
    return run.event_text_bytes() < SMALL_RUN_BYTES


def wants_short_jvm(run: RunDir) -> bool:
    return run.event_text_bytes() < SHORT_JVM_BYTES
