"""Self-contained HTML reports (images inlined as base64, no external assets) from jinja2 templates."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from scotbed.analysis.stats import flatten
from scotbed.analysis.summary import verdict_of_json


def _env() -> Environment:
    env = Environment(loader=PackageLoader("scotbed.analysis", "templates"), autoescape=select_autoescape())
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, default=str)
    return env


def image_data_uri(png: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")


def table_html(df: pd.DataFrame, max_rows: int = 200) -> Markup:
    """A pandas table as escaped HTML (pandas escapes cell text)."""
    return Markup(
        df.head(max_rows).to_html(index=False, classes="data", border=0, float_format=lambda x: f"{x:.3f}")
    )


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
        _env()
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


def render_campaign(
    out: Path,
    title: str,
    runs: pd.DataFrame,
    params: list[str],
    plots: Mapping[str, Path],
    table: pd.DataFrame,
) -> Path:
    html = (
        _env()
        .get_template("campaign.html.j2")
        .render(
            title=title,
            params=params,
            n_runs=len(runs),
            runs=table_html(runs),
            table=table_html(table, max_rows=2000),
            images={k: image_data_uri(p) for k, p in plots.items() if p.exists()},
            all_ok=bool(runs["correctness.ok"].fillna(False).all()) if "correctness.ok" in runs else None,
        )
    )
    out.write_text(html)
    return out
