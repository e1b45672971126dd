"""Renderers turn a spec and an overlay into deployable data (compose here; Kubernetes in
:mod:`scotbed.orchestrator.backends.k8s.render`); the helpers here are the only part that writes files."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from scotbed import contract
from scotbed.config import BrokerConfig, dump_all


class _Dumper(yaml.SafeDumper):
    """Block-style YAML with multi-line strings (the ConfigMap's JSON) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def to_yaml(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False)


def write_yaml_documents(path: str | Path, docs: Iterable[dict[str, Any]]) -> Path:
    """One multi-document YAML file (``kubectl apply -f`` takes it as is)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("---\n".join(to_yaml(d) for d in docs))
    return p


def write_brokers_json(path: str | Path, configs: list[BrokerConfig]) -> Path:
    """All broker configs in one file, the form ``python -m scotbed.broker --config`` reads."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(dump_all(configs), indent=1, sort_keys=True) + "\n")
    return p


def write_compose(out_dir: str | Path, doc: dict[str, Any], configs: list[BrokerConfig]) -> Path:
    """``docker-compose.yml``, ``brokers.json`` and an ``events/`` folder in ``out_dir`` (the compose
    document's relative paths point there)."""
    out = Path(out_dir)
    (out / contract.EVENTS_DIR).mkdir(parents=True, exist_ok=True)
    write_brokers_json(out / contract.BROKERS, configs)
    p = out / "docker-compose.yml"
    p.write_text(to_yaml(doc))
    return p


def write_topology_json(out: Path, scot: Any) -> Path:
    """``scotbed render``'s ``topology.json`` (the overlay a rendered run would deploy) in ``out``."""
    path = out / contract.TOPOLOGY
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scot.to_json(), indent=1) + "\n")
    return path
