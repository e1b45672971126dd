"""Campaign aggregation: each metric against each swept parameter, one line per series.

What was swept comes from the campaign, never from a comparison of the runs' specs: the
campaign directory's ``campaign.yaml`` names the matrix keys and ``index.json`` records every
cell's values, repetition and run directory. ``routing``, when the matrix sweeps it, is the series
(one line each); every other matrix key is a parameter on an x axis (with ``routing`` alone, the
routings are the x axis too). The repetitions of a cell pool into one point: the mean with a 95 %
Student-t interval, or a bootstrap interval for a per-run percentile from
:data:`~scotbed.analysis.stats.BOOTSTRAP_MIN_N` repetitions on; one repetition has no interval.
Runs whose validity verdict is host-bound are counted per point and, on request, left out.

Writes ``analysis/aggregate.parquet`` (and ``aggregate.csv``), ``analysis/runs.csv``, plots under
``analysis/plots/`` and ``report.html`` in the campaign directory.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from scotbed import contract
from scotbed.analysis import plots_campaign, report
from scotbed.analysis.stats import MeanCI, bootstrap_mean_ci, flatten, mean_ci
from scotbed.analysis.summary import verdict_of_json
from scotbed.analysis.validity import HOST_BOUND

METRICS = (
    "subscriptions.ims_total",
    "subscriptions.delay_ms.mean",
    "notifications.ims_total",
    "notifications.delay_ms.mean",
    "notifications.delay_ms.p99",
    "notifications.delay_ms.under_1s",
    "notifications.matching_us.mean",
    "queues.max_output_len",
    "traffic.false_positive_fraction",
    "stability.recovery.time_to_stabilise_s",
    "matching_steps.steps_mean",
)
PERCENTILE_SUFFIXES = (".p50", ".p90", ".p99")  # per-run percentiles: bootstrap intervals
SERIES_KEY = "routing"  # swept, it is drawn as one line per value
VALIDITY_KEY = "validity.verdict"
CELL = "cell."  # the prefix of a run row's matrix values (``cell.routing``)
TABLE_COLUMNS = [
    "parameter",
    "value",
    "x",
    "series",
    "metric",
    "n",
    "mean",
    "low",
    "high",
    "interval",
    "host_bound",
    "excluded",
]


class CampaignDirError(ValueError):
    """A directory that is not a campaign directory, or one without a finished run."""


@dataclass(frozen=True)
class CampaignRuns:
    """The finished runs of a campaign and what its matrix swept."""

    runs: pd.DataFrame  # one row per finished cell: cell.<key>, repetition, run, run_dir, summary keys
    matrix: dict[str, list[Any]]  # the campaign's matrix, in its order
    params: list[str]  # the matrix keys drawn on an x axis
    series: str | None  # the matrix key drawn as one line each, None: one line


def _matrix(root: Path) -> dict[str, list[Any]]:
    f = root / contract.CAMPAIGN_FILE
    if not f.exists():
        raise CampaignDirError(f"{root}: no {contract.CAMPAIGN_FILE}; not a campaign directory")
    doc = yaml.safe_load(f.read_text()) or {}
    matrix = doc.get("matrix")
    if not isinstance(matrix, dict) or not matrix:
        raise CampaignDirError(f"{f}: no matrix")
    return {str(k): list(v) for k, v in matrix.items()}


def _cells(root: Path) -> dict[str, dict[str, Any]]:
    f = root / contract.CAMPAIGN_INDEX
    if not f.exists():
        raise CampaignDirError(f"{root}: no {contract.CAMPAIGN_INDEX}; not a campaign directory")
    cells = json.loads(f.read_text()).get("cells")
    if not isinstance(cells, dict):
        raise CampaignDirError(f"{f}: no cells")
    return cells


def load_runs(campaign_dir: str | Path) -> CampaignRuns:
    """Every finished cell's summary with the cell's matrix values (from ``index.json``)."""
    root = Path(campaign_dir)
    matrix = _matrix(root)
    rows = []
    for key, rec in sorted(_cells(root).items()):
        run_dir = Path(rec.get("run_dir") or "")
        summary_file = run_dir / contract.SUMMARY
        if rec.get("status") != "done" or not rec.get("run_dir") or not summary_file.exists():
            continue
        values = rec.get("values") or {}
        missing = [k for k in matrix if k not in values]
        if missing:
            raise CampaignDirError(f"{root / contract.CAMPAIGN_INDEX}: cell {key} has no value for {missing}")
        row: dict[str, Any] = flatten(json.loads(summary_file.read_text()))
        row.update({f"{CELL}{k}": values[k] for k in matrix})
        row.update(cell=key, repetition=values.get("repetition", 0), run=run_dir.name, run_dir=str(run_dir))
        rows.append(row)
    if not rows:
        raise CampaignDirError(f"{root}: no finished run with an {contract.SUMMARY}")
    series = SERIES_KEY if SERIES_KEY in matrix else None
    params = [k for k in matrix if k != series] or [k for k in matrix]
    return CampaignRuns(pd.DataFrame(rows), matrix, params, series)


def _label(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else str(v)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def series_labels(c: CampaignRuns, param: str) -> pd.Series:
    """Each run's line on the plots of ``param``: the series value, then the other parameters'."""
    runs = c.runs
    base = (
        runs[f"{CELL}{c.series}"].map(_label) if c.series else runs.get("routing", pd.Series("", runs.index))
    )
    parts = [base.astype(str)]
    for other in c.params:
        if other != param:
            parts.append(other + "=" + runs[f"{CELL}{other}"].map(_label))
    label = parts[0]
    for p in parts[1:]:
        label = label + ", " + p
    return label


def point_interval(metric: str, values: Sequence[float]) -> MeanCI:
    """The point's mean and interval: bootstrap for a per-run percentile, Student-t otherwise."""
    return bootstrap_mean_ci(values) if metric.endswith(PERCENTILE_SUFFIXES) else mean_ci(values)


def _numbers(part: pd.DataFrame, metric: str) -> list[float]:
    return [float(x) for x in part[metric].tolist() if _is_number(x)]


def aggregate_table(
    c: CampaignRuns, metrics: Sequence[str] = METRICS, exclude_host_bound: bool = False
) -> pd.DataFrame:
    """One row per (parameter, value, series, metric): n, mean, low, high (NaN without an interval),
    the interval's method, the point's host-bound runs and how many of them were left out."""
    runs = c.runs
    host_bound = runs[VALIDITY_KEY].eq(HOST_BOUND) if VALIDITY_KEY in runs else pd.Series(False, runs.index)
    out = []
    for param in c.params:
        keyed = runs.assign(_series=series_labels(c, param), _value=runs[f"{CELL}{param}"].map(_label))
        order = {_label(v): i for i, v in enumerate(c.matrix[param])}
        for (series, value), part in keyed.groupby(["_series", "_value"], sort=False):
            bound = host_bound.loc[part.index]
            used = part[~bound] if exclude_host_bound else part
            raw = c.matrix[param][order[str(value)]]
            for metric in metrics:
                if metric not in part or not _numbers(part, metric):
                    continue
                ci = point_interval(metric, _numbers(used, metric))
                out.append(
                    {
                        "parameter": param,
                        "value": str(value),
                        "x": float(raw) if _is_number(raw) else None,
                        "series": str(series),
                        "metric": metric,
                        "n": ci.n,
                        "mean": ci.mean,
                        "low": ci.low,
                        "high": ci.high,
                        "interval": ci.method,
                        "host_bound": int(bound.sum()),
                        "excluded": int(bound.sum()) if exclude_host_bound else 0,
                        "_order": order[str(value)],
                    }
                )
    table = pd.DataFrame(out, columns=[*TABLE_COLUMNS, "_order"])
    table = table.sort_values(["parameter", "metric", "_order"], kind="stable")
    return table.drop(columns="_order").reset_index(drop=True).astype({"n": "int64", "host_bound": "int64"})


def _delay_curve(run_dir: str) -> pd.DataFrame:
    f = Path(run_dir) / contract.DELAY_CDF
    if not f.exists():
        return pd.DataFrame(columns=["quantile", "delay_ms"])
    label = contract.DELAY_CDF_SERIES[0][0]
    table = pd.read_parquet(f)
    return table[table["series"] == label][["quantile", "delay_ms"]]


def delay_curves(c: CampaignRuns, param: str) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """For each value of ``param``, each series' notification-delay CDF (intended → receive): the
    repetitions' quantile curves averaged quantile by quantile (their Vincentised mean). When
    ``param`` is the series itself, all its values share one plot (keyed ``"all"``)."""
    keyed = c.runs.assign(_series=series_labels(c, param), _value=c.runs[f"{CELL}{param}"].map(_label))
    if param == c.series:
        keyed = keyed.assign(_value="all")
    values = ["all"] if param == c.series else [_label(v) for v in c.matrix[param]]
    out: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for value in values:
        curves: dict[str, list[tuple[float, float]]] = {}
        for series, part in keyed[keyed["_value"] == value].groupby("_series", sort=False):
            pooled = pd.concat([_delay_curve(d) for d in part["run_dir"]], ignore_index=True)
            if len(pooled):
                mean = pooled.groupby("quantile")["delay_ms"].mean().sort_index()
                curves[str(series)] = [(float(q), float(v)) for q, v in mean.items()]
        if curves:
            out[value] = curves
    return out


def runs_overview(c: CampaignRuns, root: Path) -> list[dict[str, Any]]:
    """The report's runs table: each cell's values, verdicts and a link to its own report."""
    out = []
    for _, r in c.runs.sort_values(["cell"]).iterrows():
        run_dir = Path(str(r["run_dir"]))
        ok, verdict = verdict_of_json(json.loads((run_dir / contract.SUMMARY).read_text()))
        report_file = run_dir / contract.REPORT
        out.append(
            {
                "values": {k: _label(r[f"{CELL}{k}"]) for k in c.matrix},
                "repetition": int(r["repetition"]),
                "ok": ok,
                "verdict": verdict,
                "validity": r.get(VALIDITY_KEY) if isinstance(r.get(VALIDITY_KEY), str) else "—",
                "href": _relative(report_file, root) if report_file.exists() else None,
                "run": str(r["run"]),
            }
        )
    return out


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_uri()


def aggregate(campaign_dir: str | Path, exclude_host_bound: bool = False) -> dict[str, Any]:
    """Aggregate a campaign directory; returns paths and whether every run passed the oracle."""
    root = Path(campaign_dir)
    c = load_runs(root)
    table = aggregate_table(c, exclude_host_bound=exclude_host_bound)
    out = root / contract.ANALYSIS_DIR
    out.mkdir(parents=True, exist_ok=True)
    table.to_parquet(out / "aggregate.parquet", index=False)
    table.to_csv(out / "aggregate.csv", index=False)
    c.runs.to_csv(out / "runs.csv", index=False)
    for stale in (root / contract.PLOTS_DIR).glob("*.png"):  # a value no longer in the matrix
        stale.unlink()
    made = plots_campaign.metric_plots(table, root / contract.PLOTS_DIR, c.series)
    cdfs = {
        name: path
        for param in c.params
        for name, path in plots_campaign.delay_cdfs(
            param, delay_curves(c, param), root / contract.PLOTS_DIR, c.series
        ).items()
    }
    overview = runs_overview(c, root)
    all_ok = all(r["ok"] for r in overview)
    host_bound = int(c.runs[VALIDITY_KEY].eq(HOST_BOUND).sum()) if VALIDITY_KEY in c.runs else 0
    html = report.render_campaign(
        root / contract.REPORT,
        title=root.name,
        overview=overview,
        matrix=c.matrix,
        params=c.params,
        series=c.series,
        plots={**made, **cdfs},
        table=table,
        host_bound=host_bound,
        excluded=host_bound if exclude_host_bound else 0,
        all_ok=all_ok,
    )
    return {
        "report": html,
        "runs": len(c.runs),
        "parameters": c.params,
        "series": c.series,
        "plots": len(made) + len(cdfs),
        "all_ok": all_ok,
        "host_bound": host_bound,
    }
