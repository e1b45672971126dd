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
# compile time. Measured with benchmarks/analysis_scale.py --repeat 2, alternated, two runs each: at 0.86M
# events (91 MB) a first analysis took 14.1-15.0 s on it against 17.9-20.5 s on the long one (CPU 25 s
# against 34-38 s), a further one 9.1-10.3 s against 9.3-11.6 s; at 2.57M (274 MB) 22.8-24.1 s against
# 24.4-28.1 s, but a further one 16.8-19.2 s against 14.7-17.4 s; at 8.53M (one run each) 64.5 / 50.1 s
# against 54.8 / 43.0 s.
SHORT_JVM_BYTES = 128 << 20


def is_small(run: RunDir) -> bool:
    return run.event_text_bytes() < SMALL_RUN_BYTES


def wants_short_jvm(run: RunDir) -> bool:
    return run.event_text_bytes() < SHORT_JVM_BYTES
