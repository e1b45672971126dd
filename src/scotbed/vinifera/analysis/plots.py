"""The report plots of a peers run (Vinifera): the load distribution as a CDF over peers (Fig. 4
(e)'s axes) and the hit ratio per round (under churn, Fig. 5's)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from scotbed.analysis.plots import plt, save


def load_cdf(load: pd.DataFrame, out: Path) -> Path:
    """Share of peers (y) with at most a load (x): the load of a peer is the share of events it
    received without interest."""
    v = sorted(load["load"])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.step(v, [(i + 1) / len(v) for i in range(len(v))], where="post")
    ax.set_xlabel("load (share of events received without interest)")
    ax.set_ylabel("share of peers ≤ load")
    ax.set_xlim(left=0)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    return save(fig, out)


def hit_ratio(series: pd.DataFrame, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(series["round"], series["hit_ratio"], marker=".")
    ax.set_xlabel("round")
    ax.set_ylabel("hit ratio")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    return save(fig, out)
