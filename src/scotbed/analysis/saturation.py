"""The aggregate of a saturation campaign: each cell's sustainable interval, ratios between routings.

A cell record (from the campaign's index) holds ``values`` (the matrix values and the repetition) and
``saturate`` (``param``, ``sustainable``: the highest sustainable value found, ``unsustainable``: the
lowest unsustainable one; None where the search did not reach that bound). Writes
``analysis/saturation.csv``, one plot per swept key and ``report.html`` in the campaign directory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from scotbed import contract
from scotbed.analysis import plots_campaign, report

SERIES = "routing"  # the series of every plot and the pairs of the ratios, as in a campaign's aggregate


def sweep_table(cells: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per cell: its matrix values, repetition, sustainable and unsustainable bounds."""
    rows = [{**c["values"], **{k: c["saturate"][k] for k in ("sustainable", "unsustainable")}} for c in cells]
    return pd.DataFrame(rows)


def ratios(table: pd.DataFrame) -> pd.DataFrame:
    """For every two routings under the same other values: variant sustainable / baseline unsustainable
    (a lower bound of the ratio of their maximum sustainable values; NaN where a bound is missing)."""
    cols = ["variant", "baseline", "ratio_at_least"]
    if SERIES not in table or table[SERIES].nunique() < 2:
        return pd.DataFrame(columns=cols)
    others = [c for c in table.columns if c not in (SERIES, "sustainable", "unsustainable")]
    out = []
    for key, part in table.groupby(others, dropna=False) if others else [((), table)]:
        for _, v in part.iterrows():
            for _, b in part.iterrows():
                if v[SERIES] == b[SERIES]:
                    continue
                top = b["unsustainable"] if pd.notna(b["unsustainable"]) else b["sustainable"]
                ratio = (
                    v["sustainable"] / top if pd.notna(v["sustainable"]) and pd.notna(top) else float("nan")
                )
                keys = dict(zip(others, key if isinstance(key, tuple) else (key,), strict=True))
                out.append({**keys, "variant": v[SERIES], "baseline": b[SERIES], "ratio_at_least": ratio})
    return pd.DataFrame(out, columns=[*others, *cols])


def _plot_table(table: pd.DataFrame, param: str) -> pd.DataFrame:
    """The interval as a point with an error bar: mean = low = sustainable, high = unsustainable."""
    high = table["unsustainable"].fillna(table["sustainable"])
    data = table.assign(mean=table["sustainable"], low=table["sustainable"], high=high)
    if SERIES not in data:
        data = data.assign(**{SERIES: "spec"})
    return data.dropna(subset=["mean"]).assign(
        **{param: data[param].map(str) if param == SERIES else data[param]}
    )


def sweep_report(root: Path, cells: Sequence[Mapping[str, Any]], criterion: str) -> Path:
    """Write the table, plots and report of a saturation campaign directory; returns the report."""
    table = sweep_table(cells)
    param = str(cells[0]["saturate"]["param"])
    out = root / contract.ANALYSIS_DIR
    (root / contract.PLOTS_DIR).mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "saturation.csv", index=False)
    swept = [c for c in table.columns if c not in ("sustainable", "unsustainable", "repetition", SERIES)]
    made = {}
    for key in [k for k in swept if table[k].nunique() > 1] or [SERIES if SERIES in table else swept[0]]:
        name = re.sub(r"[^A-Za-z0-9]+", "_", f"sustainable_{param}_vs_{key}").strip("_")
        png = root / contract.PLOTS_DIR / f"{name}.png"
        made[name] = plots_campaign.metric_vs_param(
            _plot_table(table, key), key, f"sustainable {param}", png, SERIES
        )
    html = (
        report.environment()
        .get_template("saturation.html.j2")
        .render(
            title=root.name,
            param=param,
            criterion=criterion,
            images={k: report.image_data_uri(p) for k, p in made.items() if p.exists()},
            ratios=report.table_html(ratios(table)),
            cells=report.table_html(table),
        )
    )
    path = root / contract.REPORT
    path.write_text(html)
    return path
