"""The plots of a campaign: each metric against a swept parameter, and the delay CDFs per value.

One line per series with its points' intervals as error bars; a point without an interval (one
repetition) is drawn without a bar and marked ``n=1``; a point with a host-bound run is crossed in
red. Legends sit outside the axes, and the constrained layout keeps every label inside the image.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from scotbed.analysis import plots

FIGSIZE = (8.0, 4.2)
DODGE = 0.08  # on a categorical axis, the series sit this far apart so their bars do not overlap


def file_stem(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


def _positions(table: pd.DataFrame, param: str) -> tuple[pd.Series, list[str] | None]:
    """Each row's x: the value itself when every value is a number, else its category's index."""
    if table[param].map(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)).all():
        return table[param].astype(float), None
    categories = list(dict.fromkeys(table[param].astype(str)))
    return table[param].astype(str).map(categories.index).astype(float), categories


def metric_vs_param(
    table: pd.DataFrame,
    param: str,
    metric: str,
    out: Path,
    series: str = "series",
    legend_title: str | None = None,
) -> Path:
    """One line per ``series`` value: the means against ``param`` with their [low, high] as error bars.

    ``table`` has columns ``param``, ``series``, mean, low, high and optionally n and host_bound.
    """
    fig, ax = plt.subplots(figsize=FIGSIZE, layout="constrained")
    x_all, categories = _positions(table, param)
    groups = list(table.assign(_x=x_all).groupby(series, sort=False))
    shared = categories is not None and bool((table.groupby(param)[series].nunique() > 1).any())
    for k, (name, part) in enumerate(groups):
        part = part.sort_values("_x")
        x = part["_x"] + (DODGE * (k - (len(groups) - 1) / 2) if shared else 0.0)
        (line,) = ax.plot(x, part["mean"], marker="o", label=str(name))
        has = part["low"].notna() & part["high"].notna()
        ax.errorbar(
            x[has],
            part["mean"][has],
            yerr=[part["mean"][has] - part["low"][has], part["high"][has] - part["mean"][has]],
            fmt="none",
            ecolor=line.get_color(),
            capsize=4,
        )
        for xi, yi, n in zip(x, part["mean"], part["n"] if "n" in part else [None] * len(part), strict=True):
            if n == 1:
                ax.annotate("n=1", (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=8)
        if "host_bound" in part:
            hb = part["host_bound"] > 0
            ax.plot(x[hb], part["mean"][hb], "x", color="red", markersize=11, label="_host-bound")
    if "host_bound" in table and (table["host_bound"] > 0).any():
        ax.plot([], [], "x", color="red", label="has a host-bound run\n(docs/host-bound.md)")
    if categories is not None:
        ax.set_xticks(range(len(categories)), categories)
        ax.set_xlim(-0.5, len(categories) - 0.5)
    ax.set_xlabel(param)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} vs {param}")
    ax.grid(alpha=0.3)
    fig.legend(loc="outside right upper", title=legend_title or (series if series != "series" else None))
    return plots.save_laid_out(fig, out)


def metric_plots(table: pd.DataFrame, out_dir: Path, legend_title: str | None) -> dict[str, Path]:
    """One figure per (parameter, metric) of the aggregate table."""
    made: dict[str, Path] = {}
    for (param, metric), part in table.groupby(["parameter", "metric"], sort=False):
        numeric = bool(part["x"].notna().all())
        data = part.assign(**{str(param): part["x"] if numeric else part["value"]})
        name = file_stem(f"{metric}_vs_{param}")
        made[name] = metric_vs_param(
            data, str(param), str(metric), out_dir / f"{name}.png", legend_title=legend_title
        )
    return made


def delay_cdf_overlay(
    curves: Mapping[str, Sequence[tuple[float, float]]], title: str, out: Path, legend_title: str | None
) -> Path:
    """Every series' delay CDF on one axis; ``curves`` maps a series to (quantile, delay_ms) points."""
    fig, ax = plt.subplots(figsize=FIGSIZE, layout="constrained")
    for label, pts in curves.items():
        ax.plot([v for _, v in pts], [q for q, _ in pts], label=label)
    values = [v for pts in curves.values() for _, v in pts]
    log = plots.delay_axis_is_log(values)
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(
        "notification delay, intended → receive (ms, log scale)"
        if log
        else "notification delay, intended → receive (ms)"
    )
    ax.set_ylabel("fraction of deliveries\n(repetitions' quantiles averaged)")
    ax.set_ylim(0, 1.01)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.legend(loc="outside right upper", title=legend_title)
    return plots.save_laid_out(fig, out)


def delay_cdfs(
    param: str,
    by_value: Mapping[str, Mapping[str, Sequence[tuple[float, float]]]],
    out_dir: Path,
    legend_title: str | None,
) -> dict[str, Path]:
    """One overlay per value of ``param`` (:func:`delay_cdf_overlay`)."""
    made: dict[str, Path] = {}
    for value, curves in by_value.items():
        name = file_stem(f"delay_cdf_{param}_{value}")
        title = f"Delay CDF per {param}" if value == "all" else f"Delay CDF at {param} = {value}"
        made[name] = delay_cdf_overlay(curves, title, out_dir / f"{name}.png", legend_title)
    return made
