"""The report plot of a self-organising run: Eq. 2 paid per notification, per window, over time."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from scotbed.analysis.context import RunData
from scotbed.analysis.plots import plt, save


def cost_figure(series: pd.DataFrame, label: str) -> Any:
    """The figure alone (its line is the ``selforg_cost`` table's), so a test can read it back."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(series["t_s"], series["cost_per_notification"], marker=".", label=label)
    ax.set_xlabel("time since the first notification (s)")
    ax.set_ylabel("delivery cost per notification (Eq. 2)")
    ax.set_ylim(bottom=0)
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


def cost_over_time(series: pd.DataFrame, out: Path, label: str) -> Path:
    return save(cost_figure(series, label), out)


def run_plot(d: RunData, sections: Mapping[str, Any], out: Path) -> Path | None:
    """The run's ``selforg_cost`` plot (:data:`scotbed.analysis.run_plots.RUN_PLOTS`), labelled with
    the heuristic; None when the run has no ``selforg_cost`` table."""
    if "selforg_cost" not in d.tables:
        return None
    label = sections["selforg"].to_json()["heuristic"] or "static"
    return cost_over_time(d.tables["selforg_cost"], out, label)
