"""Locust master/worker Jobs for Kubernetes, as pure dicts (issue 5)."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import kubernetes_validate
import pytest
from workload_plans import plan_for

from scotbed import topology as T
from scotbed.workloads import plan as P
from scotbed.workloads import plan_json
from scotbed.workloads.entry import LOCUSTFILE
from scotbed.workloads.k8s import CONFIGMAP_LIMIT_BYTES, render_locust


@pytest.fixture(scope="module")
def plan() -> P.Plan:
    scot = T.Scot(T.paper_fig2(), 2)
    addr = {b.id: f"{b.id}.brokers.ns.svc:50051" for b in scot.brokers}
    return plan_for({"subscribers": 10, "publishers": 2}, scot, addr, seed=1, run_id="quick-1")


def test_objects_are_valid_and_the_jobs_exit(plan: P.Plan) -> None:
    objs = render_locust(plan, "Quick_Start-20260101T000000-abcd", "scotbed:0.1", workers=3,
                         labels={"scotbed.io/run": "r1"})  # fmt: skip
    assert [o["kind"] for o in objs] == ["ConfigMap", "Service", "Job", "Job"]
    for o in objs:
        kubernetes_validate.validate(o, "1.31", strict=True)
        assert o["metadata"]["labels"]["scotbed.io/run"] == "r1"
    cm, svc, master, worker = objs
    assert json.loads(cm["data"]["plan.json"]) == plan.to_json()
    assert cm["data"]["locustfile.py"] == LOCUSTFILE
    for job in (master, worker):
        spec = job["spec"]
        assert spec["backoffLimit"] == 0 and spec["template"]["spec"]["restartPolicy"] == "Never"
        assert spec["activeDeadlineSeconds"] > plan.timeout_s
    assert worker["spec"]["parallelism"] == worker["spec"]["completions"] == 3
    margs = master["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "--headless" in margs and margs[margs.index("--expect-workers") + 1] == "3"
    assert margs[margs.index("-u") + 1] == "12"
    wargs = worker["spec"]["template"]["spec"]["containers"][0]["command"]
    assert wargs[wargs.index("--master-host") + 1] == svc["metadata"]["name"]
    assert svc["spec"]["selector"] == master["spec"]["template"]["metadata"]["labels"]
    assert all(len(o["metadata"]["name"]) <= 63 and o["metadata"]["name"].islower() for o in objs)


def test_large_plan_goes_gzipped_into_binary_data(plan: P.Plan, tmp_path) -> None:
    big = plan_json.plan_from_json({**plan.to_json(), "run_id": "x" * (CONFIGMAP_LIMIT_BYTES + 10)})
    cm = render_locust(big, "r", "img")[0]
    assert "plan.json" not in cm["data"]
    raw = gzip.decompress(base64.b64decode(cm["binaryData"]["plan.json.gz"]))
    (tmp_path / "plan.json.gz").write_bytes(gzip.compress(raw))
    assert plan_json.load(tmp_path / "plan.json.gz").dumps() == big.dumps()


def test_results_on_a_claim_when_given(plan: P.Plan) -> None:
    job = render_locust(plan, "r", "img", results_claim="scotbed-results")[2]
    vols = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert vols["results"]["persistentVolumeClaim"]["claimName"] == "scotbed-results"


def test_packaged_locustfile_equals_the_repository_entry() -> None:
    repo = Path(__file__).resolve().parents[1]
    assert (repo / "workloads" / "locustfile.py").read_text() == LOCUSTFILE
    assert (repo / "src" / "scotbed" / "workloads" / "locustfile.py").read_text() == LOCUSTFILE
