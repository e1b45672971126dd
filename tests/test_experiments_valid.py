"""Every shipped experiment and campaign file passes `scotbed validate`'s checks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from scotbed.experiment.spec import load_spec
from scotbed.orchestrator.campaign import load_campaign
from scotbed.orchestrator.preflight import check

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


@pytest.mark.parametrize("path", sorted(EXPERIMENTS.glob("*.yaml")), ids=lambda p: p.name)
def test_a_shipped_file_validates(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    if "matrix" in doc:
        assert load_campaign(path).cells()
    else:
        assert check(load_spec(path)).spec.name
