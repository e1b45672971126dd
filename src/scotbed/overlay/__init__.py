"""Self-organising broker trees (Jaeger et al., SAC'07): the cost-and-interest (CI) heuristic and its
ℓMST / ℓMIT baselines as pure logic, plus a virtual-clock simulator that drives the same code.

Nothing in this package does I/O, so the broker runtime, the analysis and the simulator share it.
The readings of the paper that this code follows are in ``docs/readings.md``.
"""
