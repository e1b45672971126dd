"""Campaign aggregation: each metric against each swept parameter, one line per routing algorithm.

A campaign directory holds ``runs/*/`` run directories, each analysed
(``analysis/summary.json``) with its ``spec.resolved.yaml``. A swept parameter
is a spec key whose value differs between runs (the name, seed and routing
excluded: routing is the series, seeds are repetitions). Points are means over
repetitions with a 95% Student-t confidence interval (OctopiS Fig. 9/10).
A point whose runs include a host-bound one (``host_bound`` > 0) is marked in the table and plots.
Writes ``analysis/aggregate.parquet``, ``analysis/runs.csv``, plots under
``analysis/plots/`` and ``report.html`` in the campaign directory.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from scotbed import contract
from scotbed.analysis import plots, report
from scotbed.analysis.stats import flatten, mean_ci
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
HOST_BOUND_KEY = "validity.verdict"  # a point with a host-bound run is marked (scotbed.analysis.validity)
NOT_SWEPT = ("spec.name", "spec.seed", "spec.routing", "spec.backend", "spec.repetition", "spec.repetitions")


def load_runs(campaign_dir: Path) -> pd.DataFrame:
    """One row per analysed run: ``spec.*`` columns from the resolved spec, the rest from the summary."""
    rows = []
    for summary_file in sorted(campaign_dir.glob(f"runs/*/{contract.SUMMARY}")):
        run = summary_file.parent.parent
        spec_file = run / contract.SPEC_RESOLVED
        spec = yaml.safe_load(spec_file.read_text()) if spec_file.exists() else {}
        summary = json.loads(summary_file.read_text())
        row = {f"spec.{k}": v for k, v in flatten(spec or {}).items()}
        row.update(flatten(summary))
        row["run"] = run.name
        rows.append(row)
    return pd.DataFrame(rows)


def _key(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) or v is None else json.dumps(v, sort_keys=True)


def swept_parameters(runs: pd.DataFrame) -> list[str]:
    return [
        c
        for c in runs.columns
        if c.startswith("spec.") and c not in NOT_SWEPT and runs[c].map(_key).nunique(dropna=False) > 1
    ]


def aggregate_table(
    runs: pd.DataFrame, params: list[str], metrics: tuple[str, ...] = METRICS
) -> pd.DataFrame:
    """Tidy table: parameter, value, series (routing [+ other swept values]), metric, n, mean, low, high."""
    out = []
    if "routing" not in runs:
        runs = runs.assign(routing="unknown")
    keyed = runs.copy()
    for p in params:
        keyed[p] = keyed[p].map(_key)
    for p in params:
        others = [o for o in params if o != p]
        series = keyed["routing"].astype(str)
        for o in others:
            series = series + f", {o.removeprefix('spec.')}=" + keyed[o].astype(str)
        for metric in metrics:
            if metric not in keyed:
                continue
            for (s, v), part in keyed.assign(series=series).groupby(["series", p], dropna=False):
                ci = mean_ci([x for x in part[metric].tolist() if isinstance(x, (int, float))])
                host_bound = int((part[HOST_BOUND_KEY] == HOST_BOUND).sum()) if HOST_BOUND_KEY in part else 0
                if ci.n == 0:
                    continue
                out.append(
                    {
                        "parameter": p.removeprefix("spec."),
                        "value": str(v),
                        "x": v if isinstance(v, (int, float)) and not isinstance(v, bool) else None,
                        "series": s,
                        "metric": metric,
                        "n": ci.n,
                        "mean": ci.mean,
                        "low": ci.low,
                        "high": ci.high,
                        "host_bound": host_bound,
                    }
                )
    return pd.DataFrame(
        out, columns=["parameter", "value", "x", "series", "metric", "n", "mean", "low", "high", "host_bound"]
    )


def aggregate(campaign_dir: str | Path) -> dict[str, Any]:
    """Aggregate a campaign directory; returns paths and whether every run passed the oracle."""
    root = Path(campaign_dir)
    runs = load_runs(root)
    if runs.empty:
        raise ValueError(f"{root}: no analysed runs under runs/*/{contract.SUMMARY}")
    params = swept_parameters(runs)
    table = aggregate_table(runs, params)
    out = root / contract.ANALYSIS_DIR
    (root / contract.PLOTS_DIR).mkdir(parents=True, exist_ok=True)
    table.to_parquet(out / "aggregate.parquet", index=False)
    runs.to_csv(out / "runs.csv", index=False)
    made: dict[str, Path] = {}
    for (param, metric), part in table.groupby(["parameter", "metric"]):
        numeric = part["x"].notna().all()
        data = part.assign(**{str(param): part["x"] if numeric else part["value"]})
        name = re.sub(r"[^A-Za-z0-9]+", "_", f"{metric}_vs_{param}").strip("_")
        made[name] = plots.metric_vs_param(
            data, str(param), str(metric), root / contract.PLOTS_DIR / f"{name}.png", "series"
        )
    shown = ["run", "routing", *params, *[m for m in METRICS if m in runs], "correctness.ok", HOST_BOUND_KEY]
    html = report.render_campaign(
        root / contract.REPORT, root.name, runs[[c for c in shown if c in runs]], params, made, table
    )
    all_ok = bool(runs["correctness.ok"].fillna(False).all()) if "correctness.ok" in runs else None
    return {"report": html, "runs": len(runs), "parameters": params, "plots": len(made), "all_ok": all_ok}
