"""PNG plots of a run and of a campaign (matplotlib, Agg backend: no display needed).

Each function takes small, already-aggregated data and writes one file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from scotbed import contract

DPI = 100
PNG_COMPRESS_LEVEL = 3


def save(fig: Any, out: Path) -> Path:
    """Lay ``fig`` out once and draw it once.

    ``tight_layout`` leaves a placeholder layout engine on the figure, and ``savefig`` lays out a
    figure that has an engine by drawing it an extra time, unseen: dropping the engine saves that
    draw (a fifth of a plot's CPU) and changes no pixel. zlib's level 3 compresses a plot as small as
    the default 6 does, in half the time.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.set_layout_engine(None)
    fig.savefig(out, dpi=DPI, pil_kwargs={"compress_level": PNG_COMPRESS_LEVEL})
    plt.close(fig)
    return out


def save_laid_out(fig: Any, out: Path) -> Path:
    """Save a figure made with its own layout engine (``layout="constrained"``: room for a legend
    outside the axes, no clipped labels), at the same resolution and compression as :func:`save`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=DPI, pil_kwargs={"compress_level": PNG_COMPRESS_LEVEL})
    plt.close(fig)
    return out


LOG_SPREAD = 50  # a delay range wider than this factor is drawn on a log axis


def delay_axis_is_log(values: Sequence[float]) -> bool:
    """Log axis when every delay is positive and they span more than :data:`LOG_SPREAD`; else linear.

    Either way the axis follows the data (a 10–25 ms curve is not squeezed against a fixed 1 s mark).
    """
    return bool(values) and min(values) > 0 and max(values) / min(values) > LOG_SPREAD


def delay_cdf(curves: Mapping[str, Sequence[tuple[float, float]]], out: Path) -> Path:
    """CDF of notification delay; ``curves`` maps a label to (quantile, delay_ms) points."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, pts in curves.items():
        if pts:
            ax.plot([v for _, v in pts], [q for q, _ in pts], label=label)
    values = [v for pts in curves.values() for _, v in pts]
    log = delay_axis_is_log(values)
    if log:
        ax.set_xscale("log")
    if values and min(values) <= 1000 <= max(values):
        ax.axvline(1000, color="grey", linestyle=":", linewidth=1, label="1 s")
    ax.set_xlabel("delay (ms, log scale)" if log else "delay (ms)")
    ax.set_ylabel("fraction of deliveries")
    ax.set_title("Notification delay CDF")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3)
    ax.legend()
    return save(fig, out)


def stability(
    curve: pd.DataFrame,
    window: int,
    out: Path,
    burst: tuple[int, int] | None = None,
    recovery: Mapping[str, Any] | None = None,
) -> Path:
    """Max delay of each window of ``window`` receives against time (OctopiS Fig. 11)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    t0 = int(curve["start_ns"].min()) if len(curve) else 0
    if len(curve):
        ax.plot((curve["end_ns"] - t0) / 1e9, curve["max_delay_ms"], marker=".", label="window max")
    if burst:
        ax.axvspan((burst[0] - t0) / 1e9, (burst[1] - t0) / 1e9, color="orange", alpha=0.2, label="burst")
    if recovery and recovery.get("bound_ms") is not None:
        ax.axhline(recovery["bound_ms"], color="green", linestyle="--", linewidth=1, label="recovery bound")
    if recovery and recovery.get("stabilised_at_ns"):
        ax.axvline((recovery["stabilised_at_ns"] - t0) / 1e9, color="green", linewidth=1, label="stabilised")
    ax.set_xlabel("time since first receive (s)")
    ax.set_ylabel(f"max delay of {window} receives (ms)")
    ax.set_title("Stability curve")
    ax.grid(alpha=0.3)
    ax.legend()
    return save(fig, out)


def loop_lag(series: pd.DataFrame, curve: pd.DataFrame, origin_ns: int, bound_ms: float, out: Path) -> Path:
    """The stability curve's window-max delay over the brokers' loop lag and summed CPU share, on one
    time axis from the first publication: delays that rise with the lag are the host's, not the routing's."""
    fig, (a_delay, a_lag) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    if len(curve):
        a_delay.plot(
            (curve["end_ns"] - origin_ns) / 1e9, curve["max_delay_ms"], marker=".", label="window max"
        )
    a_delay.set_ylabel("notification delay (ms)")
    a_delay.set_title("Delay beside loop lag")
    a_delay.grid(alpha=0.3)
    if len(series):
        a_lag.plot(series["t_s"], series["lag_ms_max"], label="loop lag, worst broker")
        a_lag.plot(series["t_s"], series["lag_ms_mean"], label="loop lag, mean")
        cpu = a_lag.twinx()
        cpu.plot(series["t_s"], series["cpu_sum"], color="grey", linestyle=":", label="CPU, all brokers")
        cpu.set_ylabel("CPU share (cores)")
    a_lag.axhline(bound_ms, color="red", linestyle="--", linewidth=1, label="lag bound")
    a_lag.set_ylabel("loop lag (ms)")
    a_lag.set_xlabel("time since the first intended publication (s)")
    a_lag.grid(alpha=0.3)
    a_lag.legend(fontsize=7)
    return save(fig, out)


def queues(series: pd.DataFrame, out: Path, top: int = 8) -> Path:
    """Output-queue length (the ``top`` longest links) and input-queue length per broker over time."""
    fig, (a_out, a_in) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for direction, ax in (("output", a_out), ("input", a_in)):
        part = series[series["direction"] == direction] if len(series) else series
        if len(part):
            keys = part.groupby(["node", "link"])["max_len"].max().sort_values(ascending=False).index[:top]
            for node, link in keys:
                s = part[(part["node"] == node) & (part["link"] == link)]
                ax.plot(s["t_s"], s["max_len"], label=f"{node}→{link}" if link else node)
            ax.legend(fontsize=7, ncol=2)
        ax.set_ylabel(f"{direction} queue (msgs)")
        ax.grid(alpha=0.3)
    a_out.set_title("Queue lengths over time")
    a_in.set_xlabel("time (s)")
    return save(fig, out)


def table_sizes(series: pd.DataFrame, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for node, s in series.groupby("node"):
        ax.plot(s["t_s"], s["size"], label=str(node))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("routing-table entries")
    ax.set_title("Routing-table size")
    ax.grid(alpha=0.3)
    if series["node"].nunique() <= 12:
        ax.legend(fontsize=7, ncol=2)
    return save(fig, out)


def broker_load(load: pd.DataFrame, out: Path) -> Path:
    """Per-broker messages split into subscription and notification traffic (IMs and local)."""
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(load)), 4))
    sub = load[[contract.SUB_IN, contract.SUB_OUT, contract.UNSUB_IN, contract.UNSUB_OUT]].sum(axis=1)
    notif = load[[contract.NOTIF_IN, contract.NOTIF_OUT]].sum(axis=1)
    x = range(len(load))
    ax.bar(x, sub, label="(un)subscription msgs")
    ax.bar(x, notif, bottom=sub, label="notification msgs")
    ax.set_xticks(list(x), load["node"], rotation=90, fontsize=7)
    ax.set_ylabel("messages in + out")
    ax.set_title("Per-broker load")
    ax.legend()
    return save(fig, out)


def core_input_queue(series: pd.DataFrame, out: Path) -> Path:
    """Input-queue length of each core broker over time (selective pruning's Fig. 6/12 view), from the
    first unsubscription (time 0; the burst starts there)."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for node, s in series.groupby("node"):
        ax.plot(s["t_s"], s["input_len"], label=str(node))
    ax.axvline(0.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("time since the first unsubscription (s)")
    ax.set_ylabel("input queue (msgs, peak per sample)")
    ax.set_title("Core brokers' input queues")
    ax.grid(alpha=0.3)
    if len(series):
        ax.legend(fontsize=7, ncol=2)
    return save(fig, out)
