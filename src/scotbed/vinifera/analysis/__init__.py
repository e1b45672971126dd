"""A peers run read back: the ``peers`` section of summary.json (:mod:`.section`, one line in
:data:`scotbed.analysis.sections.SECTIONS`), the per-event records, verdict and small report
(:mod:`.report`) and the report's plots (:mod:`.plots`)."""
