"""Writers put their files where the result contract (``scotbed.contract``) says."""

from __future__ import annotations

import json
from pathlib import Path

from scotbed import contract
from scotbed.workloads.records import ProcessRecords, merge_workload


def test_workload_process_files_merge_into_the_contract_paths(tmp_path: Path) -> None:
    rec = ProcessRecords(tmp_path, "locust-w0")
    rec.event(5, "s0", contract.SUBSCRIBE, sub_id="x")
    rec.subscriptions.write({"ts_ns": 5, "op": contract.SUBSCRIBE, "sub_id": "x"})
    rec.publications.write({"ts_ns": 7, "pub_id": "p"})
    rec.close()
    assert merge_workload(tmp_path) == {"subscriptions": 1, "publications": 1}
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.jsonl")) == sorted(
        [contract.events_file("locust-w0"), contract.SUBSCRIPTIONS, contract.PUBLICATIONS]
    )
    (line,) = (tmp_path / contract.events_file("locust-w0")).read_text().splitlines()
    assert json.loads(line) == {"ts_ns": 5, "node": "s0", "ev": "subscribe", "sub_id": "x"}


def test_event_names_are_distinct_and_the_run_dirs_are_the_design_folders() -> None:
    names = contract.BROKER_EVENTS + contract.CLIENT_EVENTS
    assert len(set(names)) == len(names) == 15
    assert contract.RUN_DIRS == ("events", "workload", "locust", "analysis", "manifests")
