"""Spec errors in the user's words: one ``key.path: message`` line per pydantic error, with the path
as the user wrote it (no union tags), and for an unknown key the keys allowed there."""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel

from scotbed.errors import UserError


class SpecError(UserError):
    """A spec that cannot be run. ``problems`` holds one ``key.path: message`` line per problem."""

    def __init__(self, problems: str | Sequence[str]) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


def describe(err: Any, doc: Any, root: type[BaseModel], kinds: Sequence[str]) -> str:
    """One ``path: message`` line for a pydantic error, with the path as the user wrote it."""
    keys, value, found = _resolve(err["loc"], doc)
    path = ".".join(keys) or "(top level)"
    kind = err["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(keys[:-1], doc, root)
        return f"{path}: unknown key; allowed here: {', '.join(allowed)}"
    if kind == "missing":
        return f"{path}: required key is missing"
    if kind == "union_tag_not_found":
        return f"{path}: {err.get('input')!r} needs a 'kind'; allowed kinds: {', '.join(kinds)}"
    if kind == "union_tag_invalid":
        return f"{path}: {value!r} is not allowed; allowed: {err['ctx']['expected_tags']}"
    msg = str(err["msg"]).removeprefix("Value error, ")
    msg = msg[:1].lower() + msg[1:]
    shown = value if found else err.get("input")
    return f"{path}: {_shown(shown)} is not allowed: {msg}"


def _shown(value: Any) -> str:
    """``value`` as the user wrote it; an integer too long to print in decimal by its size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"an integer of {value.bit_length()} bits"
    return repr(value)


def _resolve(loc: Sequence[Any], doc: Any) -> tuple[list[str], Any, bool]:
    """Follow a pydantic ``loc`` through the input document, dropping union tags (``kary``) that
    pydantic inserts but the user never wrote. Returns the key path, the value there, and
    whether the value exists in the input."""
    keys: list[str] = []
    node = doc
    found = True
    for k, part in enumerate(loc):
        if isinstance(node, dict) and part in node:
            node = node[part]
            keys.append(str(part))
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            keys[-1:] = [f"{keys[-1] if keys else ''}[{part}]"]
        elif k == len(loc) - 1:
            keys.append(str(part))
            found = False
        # otherwise a union tag or validator name: not a key of the document
    return keys, node, found


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _models_in(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) for m in _models_in(a)]
    return []


def _accepts_kind(model: type[BaseModel], kind: Any) -> bool:
    field = model.model_fields.get("kind")
    return field is None or kind in typing.get_args(field.annotation)


def _allowed_keys(keys: Sequence[str], doc: Any, root: type[BaseModel]) -> list[str]:
    """The keys the model at ``keys`` accepts (for unknown-key messages)."""
    model = root
    node = doc
    for key in keys:
        name = next((n for n, f in model.model_fields.items() if (f.alias or n) == key), key)
        field = model.model_fields.get(name)
        node = node.get(key) if isinstance(node, dict) else None
        candidates = _models_in(field.annotation) if field is not None else []
        kind = node.get("kind") if isinstance(node, dict) else None
        chosen = [m for m in candidates if kind is None or _accepts_kind(m, kind)]
        if len(chosen) != 1:
            return []
        model = chosen[0]
    return [f.alias or n for n, f in model.model_fields.items()]
