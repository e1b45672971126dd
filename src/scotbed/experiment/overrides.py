"""``--set key.path=value`` overrides, applied to the spec document before it is validated."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from scotbed import yamlload
from scotbed.experiment.spec_errors import SpecError


def apply_sets(doc: dict[str, Any], sets: Iterable[str]) -> dict[str, Any]:
    """A copy of ``doc`` with each ``key.path=value`` applied; values are parsed as YAML scalars
    (or flow collections), so ``3`` is an int, ``0.5`` a float, ``true`` a bool, ``null`` None."""
    out = copy.deepcopy(doc)
    for item in sets:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise SpecError(f"--set {item!r}: expected key.path=value, e.g. workload.subscribers=100")
        try:
            value = yamlload.loads(raw, f"--set {key}") if raw.strip() else ""
        except yamlload.YamlError as e:
            raise SpecError(f"cannot parse {raw!r} as a YAML value: {e}") from None
        parts = key.split(".")
        node: Any = out
        for depth, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            elif not isinstance(child, dict):
                here = ".".join(parts[: depth + 1])
                raise SpecError(
                    f"--set {key}: {here} is {child!r}, not a mapping; set {here} as a whole, "
                    f"e.g. --set '{here}={{kind: ..., ...}}'"
                )
            node = child
        node[parts[-1]] = value
    return out
