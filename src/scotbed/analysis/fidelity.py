"""Workload fidelity: did the run's workload have the selectivity its spec asked for?

Realised selectivity = the mean over the run's subscriptions (every ``subscribe`` line of
``workload/subscriptions.jsonl``) of the fraction of the run's publications
(``workload/publications.jsonl``) each filter matches, whatever time either was issued: a
property of the workload, not of the routing. ``summary.json`` carries it next to the spec's
target (``workload.selectivity``; none for a scripted run).
"""

from __future__ import annotations

from pathlib import Path

from scotbed.analysis import jsontext
from scotbed.analysis.rundir import RunDir
from scotbed.analysis.summary import Workload
from scotbed.filters import Filter
from scotbed.matching.columnar import Columns, exact_filter
from scotbed.workloads.subscriptions import columnar_selectivity, mean_selectivity


def workload_block(run: RunDir, attrs: Columns | None = None) -> Workload:
    """The ``workload`` section of summary.json: the counts and the target and realised selectivity.
    ``attrs``: the publications' attrs as Arrow parsed them (:mod:`scotbed.analysis.pub_arrow`), if it did."""
    w = run.spec.workload
    # the target the run's spec names (every real run's does; a synthesised run's names none)
    target = w.selectivity if w.script is None and "selectivity" in w.model_fields_set else None
    filters = [Filter.from_json(d["filter"]) for d in run.subscription_ops() if d.get("op") == "subscribe"]
    n_pubs, realised = realised_selectivity(filters, run.publications_file, attrs)
    return Workload(len(filters), n_pubs, {"target": target, "realised": realised})


def realised_selectivity(
    filters: list[Filter], publications: Path, attrs: Columns | None
) -> tuple[int, float | None]:
    """(publications, realised selectivity; None without filters or publications). Counted over the
    attrs' columns where given and every filter is exact, else over the decoded lines
    (:func:`~scotbed.workloads.subscriptions.mean_selectivity`): the same count either way."""
    if not publications.exists():
        return 0, None
    if attrs is not None and all(exact_filter(f) for f in filters):
        return attrs.n, columnar_selectivity(filters, attrs) if filters and attrs.n else None
    with publications.open(encoding="utf-8") as f:
        quotes = [p["attrs"] for p in jsontext.decode_lines(f)]
    return len(quotes), mean_selectivity(filters, quotes) if filters and quotes else None
