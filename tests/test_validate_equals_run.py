"""`scotbed validate` refuses every spec that `scotbed run` refuses before it deploys, with the same
message: both go through :func:`scotbed.orchestrator.preflight.check` (TLS, the fault timeline,
the broker configs and the workload as well as the spec model of :mod:`scotbed.experiment`)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = yaml.safe_load((REPO / "experiments" / "quickstart.yaml").read_text())
VINIFERA = yaml.safe_load((REPO / "experiments" / "vinifera.yaml").read_text())


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(base)
    doc.update(changes)
    return doc


CASES = {
    "unknown key": (_with(QUICKSTART, colour="blue"), "colour: unknown key"),
    "tls on peers": (_with(VINIFERA, security={"tls": True}), "peer-process overlays"),
    "fault on no broker": (
        _with(QUICKSTART, faults=[{"at_s": 1, "action": "stop", "broker": "b-x-0"}]),
        "'b-x-0' is not a broker of this overlay",
    ),
    "kill without restart": (
        _with(QUICKSTART, faults=[{"at_s": 1, "action": "kill", "broker": "b-a-0"}]),
        "a kill needs a later restart",
    ),
    "service time of no vertex": (
        _with(QUICKSTART, brokers={"service_us_at": {"zz": 10}}),
        "zz not a vertex of the acyclic factor",
    ),
    "client without a broker": (
        _with(
            QUICKSTART,
            workload={
                **QUICKSTART["workload"],
                "placement": {"mode": "explicit", "brokers": {"s9999": "b-a-0"}},
            },
        ),
        "explicit mode has no broker for client 's00'",
    ),
    "script that is not there": (
        _with(QUICKSTART, workload={"script": "no-such-script.jsonl"}),
        "no-such-script.jsonl",
    ),
    # one case per kind of the spec model's own refusals (tests/test_spec.py has them all)
    "no name": ({k: v for k, v in QUICKSTART.items() if k != "name"}, "name: required key is missing"),
    "value out of range": (
        _with(QUICKSTART, workload={**QUICKSTART["workload"], "selectivity": 1.5}),
        "workload.selectivity: 1.5 is not allowed",
    ),
    "unknown routing": (_with(QUICKSTART, routing="octopus"), "routing: 'octopus' is not allowed"),
    "routing on the wrong overlay": (
        _with(QUICKSTART, topology={"kind": "tree", "acyclic": "paper-fig2"}, routing="snr"),
        "routing 'snr' needs a SCOT with connectivity >= 2",
    ),
    "unknown routing parameter": (
        _with(QUICKSTART, routing_params={"nope": 1}),
        "routing_params.nope: 'snr' has no parameter 'nope'",
    ),
    "placement on no cluster": (
        _with(
            QUICKSTART,
            workload={**QUICKSTART["workload"], "placement": {"mode": "per-cluster", "clusters": [7]}},
        ),
        "workload.placement.clusters[0]: 7 is not a cluster",
    ),
    "unsubscription burst without covering": (
        _with(QUICKSTART, workload={**QUICKSTART["workload"], "unsub_burst": {"count": 2}}),
        "workload.unsub_burst: needs workload.covering",
    ),
}


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scotbed.orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_validate_and_run_refuse_alike_before_deploying(case: str, tmp_path: Path) -> None:
    doc, message = CASES[case]
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(doc))
    env = {**os.environ, "SCOTBED_STATE_DIR": str(tmp_path / "state")}
    validate = _cli("validate", str(spec), env=env)
    run = _cli("run", str(spec), "--out", str(tmp_path / "runs"), "--quiet", env=env)
    for proc in (validate, run):
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert message in proc.stderr, proc.stderr
    started = list((tmp_path / "runs").glob("*/events/*.jsonl"))
    assert started == [], "run started a broker before refusing the spec"
