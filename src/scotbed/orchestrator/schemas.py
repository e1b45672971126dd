"""The JSON Schemas of the experiment spec and the campaign file, from their pydantic models.

``python -m scotbed.orchestrator.schemas DIR`` writes ``spec.schema.json`` and
``campaign.schema.json`` (``make schemas`` writes them into docs/schemas/, and a test keeps the
committed copies equal to the models). Editors that read JSON Schema validate YAML files with them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from scotbed.experiment.spec import Spec
from scotbed.orchestrator.campaign import CampaignFile

SCHEMAS = {"spec.schema.json": Spec, "campaign.schema.json": CampaignFile}


def schema_text(model: Any) -> str:
    doc = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **model.model_json_schema(by_alias=True),
    }
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in SCHEMAS.items():
        (out / name).write_text(schema_text(model))
        written.append(out / name)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/schemas")):
        print(path)
