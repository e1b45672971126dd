"""Workload fidelity: did the run's workload have the selectivity its spec asked for?

Realised selectivity = the mean over the run's subscriptions (every ``subscribe`` line of
``workload/subscriptions.jsonl``) of the fraction of the run's publications
(``workload/publications.jsonl``) each filter matches, whatever time either was issued: a
property of the workload, not of the routing. ``summary.json`` carries it next to the spec's
target (``workload.selectivity``; none for a scripted run). The publications are matched in
Spark's tasks, a partition at a time; the driver adds up two counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from scotbed.analysis.rundir import RunDir
from scotbed.analysis.summary import Workload
from scotbed.filters import Filter
from scotbed.workloads.subscriptions import matches_of

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

COUNTS_DDL = "n BIGINT, hits BIGINT"


def workload_block(run: RunDir, publications: DataFrame | None) -> Workload:
    """The ``workload`` section of summary.json: the counts and the target and realised selectivity.
    ``publications``: the run's publications as Spark reads them (``attrs`` as JSON text), if any."""
    w = run.spec.workload
    # the target the run's spec names (every real run's does; a synthesised run's names none)
    target = w.selectivity if w.script is None and "selectivity" in w.model_fields_set else None
    filters = [Filter.from_json(d["filter"]) for d in run.subscription_ops() if d.get("op") == "subscribe"]
    n_pubs, realised = realised_selectivity(filters, publications)
    return Workload(len(filters), n_pubs, {"target": target, "realised": realised})


def realised_selectivity(filters: list[Filter], publications: DataFrame | None) -> tuple[int, float | None]:
    """(publications, realised selectivity; None without filters or publications): the matches of
    every filter counted per partition (:func:`~scotbed.workloads.subscriptions.matches_of`), summed."""
    if publications is None:
        return 0, None
    from pyspark.sql import functions as F

    texts = [f.to_json() for f in filters]
    counted = publications.select("attrs").mapInArrow(lambda it: _counts(it, texts), COUNTS_DDL)
    row = counted.agg(F.sum("n"), F.sum("hits")).first()
    n, hits = (int(row[0] or 0), int(row[1] or 0)) if row is not None else (0, 0)
    return n, hits / (len(filters) * n) if filters and n else None


def _counts(batches: Iterable[pa.RecordBatch], filters: list[Any]) -> Iterator[pa.RecordBatch]:
    """Per Arrow batch of attrs (JSON text): (publications, matches of every filter)."""
    import pyarrow as pa

    parsed = [Filter.from_json(f) for f in filters]
    for batch in batches:
        quotes = [json.loads(t or "{}") for t in batch.column("attrs").to_pylist()]
        hits = matches_of(parsed, quotes) if parsed and quotes else 0
        yield pa.RecordBatch.from_pydict({"n": [len(quotes)], "hits": [hits]})
