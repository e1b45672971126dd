"""The self-organising trees in a run's analysis: the ``selforg`` section of summary.json
(:mod:`.section`, one line in :data:`scotbed.analysis.sections.SECTIONS`), the delivery cost as the run
paid it (:mod:`.cost`, pure arithmetic over events) and the ``selforg_cost`` plot (:mod:`.plots`)."""
