"""A run's spec.resolved.yaml reads back into the typed spec (:func:`scotbed.experiment.load_resolved`),
which the analysis reads instead of the YAML: one home for every default."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from scotbed import contract
from scotbed.analysis.metrics import burst_from_spec
from scotbed.analysis.rundir import RunDir
from scotbed.experiment import SpecError, load_resolved, parse_spec
from scotbed.experiment.spec import AnalysisSpec, WorkloadSpec
from scotbed.orchestrator.provenance import resolved_spec_text

SPEC = {"name": "r", "routing": "rpf", "topology": {"kind": "tree", "acyclic": "paper-fig2"}}


def test_a_resolved_spec_with_its_provenance_reads_back_to_the_spec_it_was_written_from(
    tmp_path: Path,
) -> None:
    spec = parse_spec({**SPEC, "analysis": {"stability_window": 7}})
    (tmp_path / contract.SPEC_RESOLVED).write_text(resolved_spec_text(spec, "r-1", "local", ["x=1"]))
    assert "run" in yaml.safe_load((tmp_path / contract.SPEC_RESOLVED).read_text())
    for where in (tmp_path, tmp_path / contract.SPEC_RESOLVED, str(tmp_path)):
        back = load_resolved(where)
        assert back.model_dump() == spec.model_dump()
        assert back.base_dir == tmp_path.resolve()
    run = RunDir(tmp_path)
    assert (run.spec.analysis.stability_window, run.routing) == (7, "rpf")
    assert run.provenance["run_id"] == "r-1" and run.provenance["host"]["cpus"] >= 1


def test_a_key_an_older_run_lacks_takes_the_model_default(tmp_path: Path) -> None:
    (tmp_path / contract.SPEC_RESOLVED).write_text(yaml.safe_dump(SPEC))
    spec = load_resolved(tmp_path)
    assert spec.analysis == AnalysisSpec() and spec.workload == WorkloadSpec()
    assert RunDir(tmp_path).stability_window == AnalysisSpec().stability_window


def test_a_run_without_a_resolved_spec_reads_every_default_and_an_unknown_routing(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    assert run.routing == "unknown" and run.provenance == {}
    assert run.spec.analysis == AnalysisSpec() and run.spec.topology.kind == "scot"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({**SPEC, "analysis": {"stability_window": 0}}, "analysis.stability_window"),
        ({**SPEC, "colour": "blue"}, "colour: unknown key"),
        (["not", "a", "mapping"], "must be a mapping"),
    ],
)
def test_a_resolved_spec_the_model_refuses_names_the_file_and_the_key(
    tmp_path: Path, doc: object, message: str
) -> None:
    (tmp_path / contract.SPEC_RESOLVED).write_text(yaml.safe_dump(doc))
    with pytest.raises(SpecError, match=message) as e:
        load_resolved(tmp_path)
    assert contract.SPEC_RESOLVED in str(e.value)


def test_a_missing_resolved_spec_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=contract.SPEC_RESOLVED):
        load_resolved(tmp_path)


def test_the_burst_comes_from_the_typed_hrp_block_scaled_by_the_time_scale() -> None:
    assert burst_from_spec(parse_spec(SPEC), 0) is None
    hrp = {"rate_per_minute": 600.0, "notifications": 100, "start_s": 2.0}
    spec = parse_spec({**SPEC, "workload": {"hrp": hrp, "time_scale": 2.0}})
    # 100 notifications at 600/min over time_scale 2 (300/min): 20 s, from 2 s after the first
    assert burst_from_spec(spec, 1_000) == (1_000 + 2_000_000_000, 1_000 + 22_000_000_000)
