"""Campaign aggregation over hand-made analysed runs: means, t intervals, plots, report."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from scotbed.analysis.campaign import aggregate, load_runs, swept_parameters


def _run(
    root: Path, name: str, routing: str, subscribers: int, seed: int, delay: float, ok: bool = True
) -> None:
    d = root / "runs" / name
    (d / "analysis").mkdir(parents=True)
    spec = {
        "name": "c",
        "seed": seed,
        "routing": routing,
        "workload": {"subscribers": subscribers, "symbols": 500},
    }
    (d / "spec.resolved.yaml").write_text(yaml.safe_dump(spec))
    summary = {
        "schema_version": 1,
        "run_id": name,
        "routing": routing,
        "notifications": {"delay_ms": {"mean": delay}, "ims_total": subscribers * 2},
        "correctness": {"ok": ok},
    }
    (d / "analysis" / "summary.json").write_text(json.dumps(summary))


def test_aggregate_means_and_intervals_per_routing(tmp_path: Path) -> None:
    delays = {
        ("snr", 100): [10, 12, 14],
        ("snr", 200): [20, 20, 20],
        ("bid", 100): [30, 31, 32],
        ("bid", 200): [40],
    }
    for (routing, subs), ds in delays.items():
        for seed, d in enumerate(ds):
            _run(tmp_path, f"{routing}-{subs}-{seed}", routing, subs, seed, d)
    runs = load_runs(tmp_path)
    assert len(runs) == 10
    assert swept_parameters(runs) == ["spec.workload.subscribers"]

    result = aggregate(tmp_path)
    assert result["parameters"] == ["spec.workload.subscribers"] and result["all_ok"] is True
    table = pd.read_parquet(tmp_path / "analysis" / "aggregate.parquet")
    delay = table[table["metric"] == "notifications.delay_ms.mean"].set_index(["series", "value"])
    snr = delay.loc[("snr", "100")]
    assert (snr["n"], snr["mean"]) == (3, 12.0)
    assert snr["high"] - snr["mean"] == pytest.approx(4.3027 * 2 / 3**0.5, abs=1e-3)  # t(0.975, 2)·s/√n
    assert delay.loc[("snr", "200"), "high"] == 20.0  # no spread, no interval
    assert delay.loc[("bid", "200"), "n"] == 1
    ims = table[table["metric"] == "notifications.ims_total"].set_index(["series", "value"])
    assert ims.loc[("bid", "200"), "mean"] == 400
    plots = sorted(p.name for p in (tmp_path / "analysis" / "plots").glob("*.png"))
    assert plots == [
        "notifications_delay_ms_mean_vs_workload_subscribers.png",
        "notifications_ims_total_vs_workload_subscribers.png",
    ]
    html = (tmp_path / "report.html").read_text()
    assert 'id="verdict" class="verdict ok"' in html and html.count("data:image/png;base64,") == 2


def test_aggregate_flags_a_failed_run(tmp_path: Path) -> None:
    _run(tmp_path, "a", "snr", 100, 0, 10.0)
    _run(tmp_path, "b", "snr", 100, 1, 11.0, ok=False)
    assert aggregate(tmp_path)["all_ok"] is False
    assert "verdict fail" in (tmp_path / "report.html").read_text()


def test_cli_exit_codes_without_spark(tmp_path: Path) -> None:
    from scotbed.analysis.cli import main

    assert main([str(tmp_path / "missing")]) == 2
    (tmp_path / "empty-run" / "events").mkdir(parents=True)
    assert main([str(tmp_path / "empty-run")]) == 2  # no event logs
    _run(tmp_path / "camp", "a", "snr", 100, 0, 10.0)
    assert main([str(tmp_path / "camp")]) == 0
    _run(tmp_path / "camp", "b", "snr", 100, 1, 10.0, ok=False)
    assert main([str(tmp_path / "camp")]) == 1
