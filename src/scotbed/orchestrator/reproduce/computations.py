"""The registry of computed reproduction rows (:mod:`.computed`): one line per computation, imported
by the rows' checks and the runner alike, so it depends on nothing of theirs."""

#: row ``computed:`` name -> "module:function" (seed, **parameters) -> series name -> summary
COMPUTATIONS: dict[str, str] = {
    "link-matching-steps": "scotbed.analysis.link_matching_steps:summaries",
    "selforg-paper": "scotbed.selforg.paper:summaries",
    "selforg-paper-eta": "scotbed.selforg.paper:eta_summaries",
}
