"""A run's plots, each drawn as soon as the sections it shows are done, in one background thread.

Drawing is Python work and Spark's queries are mostly waits on the JVM, so the plots of the early
sections are drawn while the later sections compute, not after the last query. One thread draws them
all: pyplot keeps global state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scotbed.analysis import plots, plots_topology
from scotbed.analysis.context import RunData
from scotbed.selforg.analysis import plots as selforg_plots

Sections = Mapping[str, Any]


@dataclass(frozen=True)
class RunPlot:
    """One PNG: the sections whose results it draws, and how (None when the run has nothing to show)."""

    name: str
    needs: tuple[str, ...]
    draw: Callable[[RunData, Sections, Path], Path | None]


def _stability(d: RunData, _: Sections, out: Path) -> Path:
    curve, window, burst, recovery = d.plot_data["stability"]
    return plots.stability(curve, window, out, burst, recovery)


def _loop_lag(d: RunData, _: Sections, out: Path) -> Path:
    curve = d.plot_data["stability"][0]
    lag_series, v = d.plot_data["loop_lag"]
    origin = v.window.get("start_ns") or (int(curve["start_ns"].min()) if len(curve) else 0)
    return plots.loop_lag(lag_series, curve, origin, v.bounds["lag_bound_ms"], out)


def _topology(d: RunData, _: Sections, out: Path) -> Path | None:
    scot = plots_topology.scot_of(d.run.topology) if d.run.topology else None
    return plots_topology.draw(scot, out) if scot is not None else None


def _core_input_queue(d: RunData, _: Sections, out: Path) -> Path | None:
    return plots.core_input_queue(d.tables["core_queues"], out) if "core_queues" in d.tables else None


# In the report's order.
RUN_PLOTS: tuple[RunPlot, ...] = (
    RunPlot("delay_cdf", ("notifications",), lambda d, _, out: plots.delay_cdf(d.plot_data["cdf"], out)),
    RunPlot("stability", ("stability",), _stability),
    RunPlot("queues", ("queues",), lambda d, _, out: plots.queues(d.tables["queues"], out)),
    RunPlot("table_sizes", ("tables",), lambda d, _, out: plots.table_sizes(d.tables["table_series"], out)),
    RunPlot("load", ("load",), lambda d, _, out: plots.broker_load(d.tables["load"], out)),
    RunPlot("loop_lag", ("stability", "validity"), _loop_lag),
    RunPlot("topology", (), _topology),
    RunPlot("selforg_cost", ("selforg",), selforg_plots.run_plot),
    RunPlot("core_input_queue", ("pruning",), _core_input_queue),
)


class Plotter:
    """Draws :data:`RUN_PLOTS` into ``plots/`` as their sections finish (:meth:`done`)."""

    def __init__(self, data: RunData) -> None:
        self._data = data
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scotbed-plots")
        self._drawing: dict[str, Future[Path | None]] = {}
        self.done({})

    def done(self, sections: Sections) -> None:
        """Start every plot whose sections are all in ``sections``."""
        for p in RUN_PLOTS:
            if p.name not in self._drawing and all(n in sections for n in p.needs):
                out = self._data.run.plots_dir / f"{p.name}.png"
                self._drawing[p.name] = self._pool.submit(p.draw, self._data, sections, out)

    def made(self) -> dict[str, Path]:
        """Every drawn plot by name, in the report's order (waits for the drawing; raises its error)."""
        try:
            drawn = {name: f.result() for name, f in self._drawing.items()}
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
        return {p.name: path for p in RUN_PLOTS if (path := drawn.get(p.name)) is not None}

    def cancel(self) -> None:
        """Drop the plots not started (an analysis that failed); one being drawn finishes."""
        self._pool.shutdown(wait=False, cancel_futures=True)
