"""Workload fidelity: did the run's workload have the selectivity its spec asked for?

Realised selectivity = the mean over the run's subscriptions (every ``subscribe`` line of
``workload/subscriptions.jsonl``) of the fraction of the run's publications
(``workload/publications.jsonl``) each filter matches, whatever time either was issued: a
property of the workload, not of the routing. ``summary.json`` carries it next to the spec's
target (``workload.selectivity``; none for a scripted run).
"""

from __future__ import annotations

from scotbed.analysis import jsontext
from scotbed.analysis.rundir import RunDir
from scotbed.analysis.summary import Workload
from scotbed.filters import Filter
from scotbed.workloads.subscriptions import mean_selectivity


def workload_block(run: RunDir) -> Workload:
    """The ``workload`` section of summary.json: the counts and the target and realised selectivity."""
    spec_workload = run.spec.get("workload") or {}
    target = None if spec_workload.get("script") else spec_workload.get("selectivity")
    filters = [Filter.from_json(d["filter"]) for d in run.subscription_ops() if d.get("op") == "subscribe"]
    quotes = []
    if run.publications_file.exists():
        with run.publications_file.open(encoding="utf-8") as f:
            quotes = [p["attrs"] for p in jsontext.decode_lines(f)]
    realised = mean_selectivity(filters, quotes) if filters and quotes else None
    return Workload(len(filters), len(quotes), {"target": target, "realised": realised})
