"""Campaign aggregation over hand-made campaign directories: the swept parameters come from the
campaign (never from the runs' specs), repetitions pool into one point, and every interval equals
scipy's own computation."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from scotbed.analysis.campaign import aggregate, load_runs
from scotbed.analysis.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED

DELAY = "notifications.delay_ms.mean"


class CampaignDir:
    """A campaign directory as `scotbed campaign` leaves it: campaign.yaml, index.json, runs/<cell>/."""

    def __init__(self, root: Path, matrix: Mapping[str, Sequence[Any]]) -> None:
        self.root = root
        self.matrix = dict(matrix)
        (root / "runs").mkdir(parents=True)
        (root / "campaign.yaml").write_text(yaml.safe_dump({"name": root.name, "matrix": self.matrix}))
        self.cells: dict[str, Any] = {}

    def run(
        self,
        values: Mapping[str, Any],
        rep: int,
        delay: float,
        ok: bool = True,
        validity: str = "valid",
        p99: float | None = None,
        status: str = "done",
    ) -> Path:
        key = ",".join([*(f"{k}={v}" for k, v in values.items()), f"rep={rep}"])
        d = self.root / "runs" / key.replace("rep=", "r")
        (d / "analysis").mkdir(parents=True)
        # every run's resolved spec differs in its provenance, as real runs' do: never a parameter
        spec = {
            "name": "c",
            "seed": 7 + rep,
            "routing": values.get("routing", "snr"),
            "run": {"run_id": f"c-{key}", "started_utc": f"2026-01-01T00:00:0{rep}Z", "sets": [key]},
        }
        (d / "spec.resolved.yaml").write_text(yaml.safe_dump(spec))
        summary = {
            "schema_version": 1,
            "run_id": key,
            "routing": values.get("routing", "snr"),
            "notifications": {
                "published": 10,
                "expected_deliveries": 10,
                "delivered": 10,
                "missing": 0,
                "duplicates": 0,
                "false_positives": 0 if ok else 3,
                "in_transition": 0,
                "ims_total": 40,
                "dynamic_copies": 0,
                "delay_ms": {"mean": delay, "p99": p99 if p99 is not None else 2 * delay},
                "send_delay_ms": {"mean": delay},
                "matching_us": {"mean": 3.0},
                "hops": {},
            },
            "correctness": {"ok": ok, "engine": "counting", "settle_ms": 0.0},
            "validity": {"verdict": validity},
        }
        (d / "analysis" / "summary.json").write_text(json.dumps(summary))
        (d / "report.html").write_text("<html></html>")
        self.cells[key] = {
            "status": status,
            "run_dir": str(d),
            "values": {**values, "repetition": rep, "seed": 7 + rep},
        }
        (self.root / "index.json").write_text(json.dumps({"cells": self.cells}))
        return d


def _point(root: Path, metric: str = DELAY) -> pd.DataFrame:
    table = pd.read_parquet(root / "analysis" / "aggregate.parquet")
    return table[table["metric"] == metric].set_index(["series", "value"])


def test_repetitions_pool_into_points_with_scipys_t_interval(tmp_path: Path) -> None:
    c = CampaignDir(tmp_path / "camp", {"workload.subscribers": [100, 200]})
    delays = {100: [10.0, 12.0, 17.0], 200: [20.0, 26.0, 23.0]}
    for subs, ds in delays.items():
        for rep, d in enumerate(ds):
            c.run({"workload.subscribers": subs}, rep, d)

    result = aggregate(c.root)
    assert result["parameters"] == ["workload.subscribers"] and result["series"] is None
    table = pd.read_parquet(c.root / "analysis" / "aggregate.parquet")
    assert set(table["parameter"]) == {"workload.subscribers"}
    point = _point(c.root)
    for subs, ds in delays.items():
        row = point.loc[("snr", str(subs))]
        low, high = stats.t.interval(0.95, len(ds) - 1, loc=np.mean(ds), scale=stats.sem(ds))
        assert (row["n"], row["mean"], row["interval"]) == (3, np.mean(ds), "t")
        assert row["low"] == pytest.approx(low, rel=1e-12) and row["high"] == pytest.approx(high, rel=1e-12)
    csv = pd.read_csv(c.root / "analysis" / "aggregate.csv")
    assert len(csv) == len(table) and list(csv.columns) == list(table.columns)


def test_routing_is_the_series_and_one_run_has_no_interval(tmp_path: Path) -> None:
    c = CampaignDir(tmp_path / "camp", {"routing": ["snr", "bid"], "workload.subscribers": [100, 200]})
    for rep, d in enumerate([10.0, 14.0]):
        c.run({"routing": "snr", "workload.subscribers": 100}, rep, d)
    c.run({"routing": "snr", "workload.subscribers": 200}, 0, 20.0)
    c.run({"routing": "bid", "workload.subscribers": 100}, 0, 30.0)
    c.run({"routing": "bid", "workload.subscribers": 200}, 0, 40.0, status="failed")  # not counted

    result = aggregate(c.root)
    assert result["parameters"] == ["workload.subscribers"] and result["series"] == "routing"
    assert result["runs"] == 4
    point = _point(c.root)
    assert point.loc[("snr", "100"), "n"] == 2
    one = point.loc[("snr", "200")]
    assert one["n"] == 1 and math.isnan(one["low"]) and math.isnan(one["high"]) and one["interval"] == "none"
    assert ("bid", "200") not in point.index
    html = (c.root / "report.html").read_text()
    assert "n = 1, no interval" in html
    assert html.count('href="runs/') == 4  # every finished run's own report is linked
    assert 'href="runs/routing=snr,workload.subscribers=100,r1/report.html"' in html


def test_routing_alone_is_both_the_axis_and_the_series(tmp_path: Path) -> None:
    c = CampaignDir(tmp_path / "camp", {"routing": ["snr", "bid"]})
    for routing, ds in {"snr": [10.0, 11.0], "bid": [20.0, 23.0]}.items():
        for rep, d in enumerate(ds):
            c.run({"routing": routing}, rep, d)
    result = aggregate(c.root)
    assert result["parameters"] == ["routing"] and result["series"] == "routing"
    point = _point(c.root)
    assert point.loc[("bid", "bid"), "mean"] == 21.5 and point.loc[("bid", "bid"), "n"] == 2


def test_percentiles_get_scipys_bootstrap_interval_from_five_repetitions(tmp_path: Path) -> None:
    c = CampaignDir(tmp_path / "camp", {"workload.subscribers": [100]})
    p99s = [50.0, 61.0, 55.0, 80.0, 52.0]
    for rep, p in enumerate(p99s):
        c.run({"workload.subscribers": 100}, rep, 10.0 + rep, p99=p)
    aggregate(c.root)
    row = _point(c.root, "notifications.delay_ms.p99").loc[("snr", "100")]
    expected = stats.bootstrap(
        (np.asarray(p99s),),
        np.mean,
        confidence_level=0.95,
        n_resamples=BOOTSTRAP_RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(BOOTSTRAP_SEED),
    ).confidence_interval
    assert (row["n"], row["interval"]) == (5, "bootstrap")
    assert (row["low"], row["high"]) == (pytest.approx(expected.low), pytest.approx(expected.high))
    assert _point(c.root).loc[("snr", "100"), "interval"] == "t"  # a mean keeps its t interval


def test_host_bound_runs_are_counted_and_left_out_on_request(tmp_path: Path) -> None:
    c = CampaignDir(tmp_path / "camp", {"workload.subscribers": [100]})
    c.run({"workload.subscribers": 100}, 0, 10.0)
    c.run({"workload.subscribers": 100}, 1, 12.0)
    c.run({"workload.subscribers": 100}, 2, 400.0, validity="host-bound")
    assert aggregate(c.root)["host_bound"] == 1
    row = _point(c.root).loc[("snr", "100")]
    assert (row["n"], row["host_bound"], row["excluded"]) == (3, 1, 0)
    aggregate(c.root, exclude_host_bound=True)
    row = _point(c.root).loc[("snr", "100")]
    assert (row["n"], row["mean"], row["host_bound"], row["excluded"]) == (2, 11.0, 1, 1)
    assert "1 host-bound run(s) left out of the statistics" in (c.root / "report.html").read_text()


def test_plots_one_per_metric_and_a_delay_cdf_per_value(tmp_path: Path) -> None:
    c = CampaignDir(tmp_path / "camp", {"routing": ["snr", "bid"], "workload.subscribers": [100, 200]})
    for routing in ("snr", "bid"):
        for subs in (100, 200):
            for rep in range(2):
                d = c.run({"routing": routing, "workload.subscribers": subs}, rep, 10.0 + rep)
                qs = [0.0, 0.5, 1.0]
                cdf = pd.DataFrame(
                    {
                        "series": ["intended → receive"] * 3 + ["sent → receive"] * 3,
                        "quantile": qs * 2,
                        "delay_ms": [1.0 + rep, 5.0 + rep, 9.0 + rep, 0.5, 1.0, 2.0],
                    }
                )
                cdf.to_parquet(d / "analysis" / "delay_cdf.parquet")
    aggregate(c.root)
    plots = sorted(p.name for p in (c.root / "analysis" / "plots").glob("*.png"))
    assert "notifications_delay_ms_mean_vs_workload_subscribers.png" in plots
    assert [p for p in plots if p.startswith("delay_cdf_")] == [
        "delay_cdf_workload_subscribers_100.png",
        "delay_cdf_workload_subscribers_200.png",
    ]
    html = (c.root / "report.html").read_text()
    assert html.count('id="plot-delay_cdf_') == 2


def test_load_runs_refuses_a_directory_that_is_no_campaign(tmp_path: Path) -> None:
    from scotbed.analysis.campaign import CampaignDirError

    (tmp_path / "runs").mkdir()
    with pytest.raises(CampaignDirError, match=r"campaign\.yaml"):
        load_runs(tmp_path)


def test_aggregate_flags_a_failed_run(tmp_path: Path) -> None:
    c = CampaignDir(tmp_path / "camp", {"workload.subscribers": [100]})
    c.run({"workload.subscribers": 100}, 0, 10.0)
    c.run({"workload.subscribers": 100}, 1, 11.0, ok=False)
    assert aggregate(c.root)["all_ok"] is False
    assert "verdict fail" in (c.root / "report.html").read_text()


def test_cli_exit_codes_without_spark(tmp_path: Path) -> None:
    from scotbed.analysis.cli import main

    assert main([str(tmp_path / "missing")]) == 2
    (tmp_path / "empty-run" / "events").mkdir(parents=True)
    assert main([str(tmp_path / "empty-run")]) == 2  # no event logs
    c = CampaignDir(tmp_path / "camp", {"workload.subscribers": [100]})
    c.run({"workload.subscribers": 100}, 0, 10.0)
    assert main([str(c.root)]) == 0
    c.run({"workload.subscribers": 100}, 1, 10.0, ok=False)
    assert main([str(c.root)]) == 1
