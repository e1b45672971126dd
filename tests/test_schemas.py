"""The committed JSON Schemas equal what the spec's and the campaign file's models export."""

from __future__ import annotations

from pathlib import Path

import pytest

from scotbed.orchestrator.schemas import SCHEMAS, schema_text

DOCS = Path(__file__).resolve().parents[1] / "docs" / "schemas"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_committed_schema_is_current(name: str) -> None:
    assert (DOCS / name).read_text() == schema_text(SCHEMAS[name]), f"run `make schemas` to refresh {name}"
