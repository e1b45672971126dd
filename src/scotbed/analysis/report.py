"""Self-contained HTML reports (images inlined as base64, no external assets) from jinja2 templates."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from scotbed.analysis.stats import flatten
from scotbed.analysis.summary import verdict_of_json


def environment() -> Environment:
    """The templates of the analysis's HTML pages (``analysis/templates``) with its number and JSON
    filters."""
    env = Environment(loader=PackageLoader("scotbed.analysis", "templates"), autoescape=select_autoescape())
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, default=str)
    env.filters["number"] = fmt_number
    return env


def image_data_uri(png: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")


#: what a "—" cell of a report table means, printed under every table that has one
BLANK_NOTE = "— : no value, nothing of this kind was recorded for that row (e.g. a broker that sent none)."


def table_html(df: pd.DataFrame, max_rows: int = 200) -> Markup:
    """A pandas table as escaped HTML (pandas escapes cell text), every figure through
    :func:`fmt_number`: whole numbers as integers, others to four significant digits, none as "—"."""
    shown = df.head(max_rows)
    cells = shown.astype(object).map(fmt_number) if len(shown.columns) else shown
    html = cells.to_html(index=False, classes="data", border=0)
    blank = bool(shown.isna().to_numpy().any()) if len(shown) else False
    return Markup(html + (f'<p class="note">{BLANK_NOTE}</p>' if blank else ""))


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, Any]]:
    skip = ("correctness.first_",)
    return [(k, v) for k, v in flatten(summary).items() if not k.startswith(skip)]


def render_run(
    out: Path,
    summary: Mapping[str, Any],
    spec_text: str,
    plots: Mapping[str, Path],
    tables: Mapping[str, pd.DataFrame],
) -> Path:
    html = (
        environment()
        .get_template("report.html.j2")
        .render(
            summary=summary,
            correctness=summary.get("correctness", {}),
            verdict=verdict_of_json(summary),  # the CLI's verdict, from the same (fault-attributed) counts
            spec_text=spec_text,
            images={k: image_data_uri(p) for k, p in plots.items() if p.exists()},
            tables={k: table_html(v) for k, v in tables.items()},
            rows=summary_rows(summary),
        )
    )
    out.write_text(html)
    return out


def fmt_number(v: Any) -> str:
    """A figure as a person reads it: integers without decimals, others to four significant digits
    (no exponent below a million), a missing value as "—"; anything else as text."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if float(v).is_integer() and abs(v) < 1e15:
        return str(int(v))
    if 1e-3 <= abs(v) < 1e6:
        return f"{float(f'{v:.4g}'):g}" if abs(v) < 1e4 else f"{v:.0f}"
    return f"{v:.4g}"


def interval_text(row: Mapping[str, Any]) -> str:
    """``[low, high]`` and how it was computed, or why a point has none."""
    if row["n"] <= 1 or pd.isna(row["low"]):
        return f"n = {int(row['n'])}, no interval"
    return f"[{fmt_number(row['low'])}, {fmt_number(row['high'])}] ({row['interval']})"


def render_campaign(
    out: Path,
    *,
    title: str,
    overview: Sequence[Mapping[str, Any]],
    matrix: Mapping[str, Sequence[Any]],
    params: Sequence[str],
    series: str | None,
    plots: Mapping[str, Path],
    table: pd.DataFrame,
    host_bound: int,
    excluded: int,
    all_ok: bool,
) -> Path:
    rows = [
        {**r, "mean_text": fmt_number(r["mean"]), "interval_text": interval_text(r)}
        for r in table.to_dict("records")
    ]
    html = (
        environment()
        .get_template("campaign.html.j2")
        .render(
            title=title,
            overview=overview,
            matrix=matrix,
            params=params,
            series=series,
            n_runs=len(overview),
            rows=rows,
            images={k: image_data_uri(p) for k, p in plots.items() if p.exists()},
            host_bound=host_bound,
            excluded=excluded,
            all_ok=all_ok,
        )
    )
    out.write_text(html)
    return out
