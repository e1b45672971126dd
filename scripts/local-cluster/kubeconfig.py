"""Put the local cluster's context into a kubeconfig (and make it current), or take it out again.

``kubeconfig.py merge FILE SOURCE CONTEXT``: copy CONTEXT's cluster, user and context entries from
SOURCE into FILE (created when missing) and set it as current-context; other entries stay.
``kubeconfig.py remove FILE CONTEXT``: drop those entries again (current-context too, if it was ours).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import yaml

SECTIONS = {"clusters": "cluster", "users": "user", "contexts": "context"}


def _load(path: Path) -> dict[str, Any]:
    if path.is_file():
        doc = yaml.safe_load(path.read_text()) or {}
        if isinstance(doc, dict):
            return doc
    return {"apiVersion": "v1", "kind": "Config", "preferences": {}}


def _names(ctx: dict[str, Any]) -> dict[str, str]:
    entry = ctx["context"]
    return {"clusters": entry["cluster"], "users": entry["user"], "contexts": ctx["name"]}


def _context(doc: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((c for c in doc.get("contexts") or [] if c.get("name") == name), None)


def merge(dest: Path, source: Path, context: str) -> None:
    src, doc = _load(source), _load(dest)
    ctx = _context(src, context)
    if ctx is None:
        raise SystemExit(f"{source}: no context {context!r}")
    for section, name in _names(ctx).items():
        entry = next(e for e in src[section] if e["name"] == name)
        doc[section] = [e for e in doc.get(section) or [] if e.get("name") != name] + [entry]
    doc["current-context"] = context
    _write(dest, doc)


def remove(dest: Path, context: str) -> None:
    if not dest.is_file():
        return
    doc = _load(dest)
    ctx = _context(doc, context)
    if ctx is None:
        return
    for section, name in _names(ctx).items():
        doc[section] = [e for e in doc.get(section) or [] if e.get("name") != name]
    if doc.get("current-context") == context:
        doc["current-context"] = ""
    _write(dest, doc)


def _write(dest: Path, doc: dict[str, Any]) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.write_text(yaml.safe_dump(doc, sort_keys=False))
    os.chmod(tmp, 0o600)
    tmp.replace(dest)


if __name__ == "__main__":
    cmd, *rest = sys.argv[1:]
    if cmd == "merge":
        merge(Path(rest[0]), Path(rest[1]), rest[2])
    elif cmd == "remove":
        remove(Path(rest[0]), rest[1])
    else:
        raise SystemExit(f"unknown command {cmd!r} (merge, remove)")
