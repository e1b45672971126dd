"""Self-organising broker trees (Jaeger et al., SAC'07): the cost-and-interest (CI) heuristic and its
ℓMST / ℓMIT baselines.

The core modules are pure logic with no I/O, so the broker, the analysis and the virtual-clock
simulator (:mod:`.sim`) run the same code. :mod:`.manager` is that logic's I/O inside a broker (the
broker runtime imports it); :mod:`.analysis` is the run's ``selforg`` section. The core imports
neither (an import-linter contract in pyproject.toml). The readings of the paper that this code
follows are in ``docs/readings.md``.
"""
