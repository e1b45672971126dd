"""``scotbed reproduce``: each paper's headline experiment re-run at a stated scale, its measured
effect (with a confidence interval over repetitions) next to the paper's, in docs/reproduction.md.

The rows are data (``rows.yaml``, :mod:`.rows`); the runs go through the campaign machinery, so a
finished run is not re-run (:mod:`.runner`); :mod:`.effects` computes and judges the effects and
:mod:`.doc` writes the table and a plot per row.
"""
