"""Strict YAML reading for user files (specs, campaigns, scripts).

``yaml.safe_load`` lets a duplicated key silently win and reports a file
that is not UTF-8 as a Python traceback. Here a duplicate key is an error
naming the key and both lines, and undecodable bytes are an error naming
the byte offset; every problem is a :class:`YamlError` whose message starts
with ``file:line:column``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml


class YamlError(ValueError):
    """A YAML file that cannot be read; the message names the file and where."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with the same key twice."""


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            first = seen.get(key)
        except TypeError:  # an unhashable key: the constructor below names it
            continue
        if first is not None:
            m = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key {key!r} (first at line {first.start_mark.line + 1})",
                m,
            )
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
# YAML 1.2 floats: PyYAML (YAML 1.1) reads 2e3 and 1E-3 as strings
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def loads(text: str, source: str) -> Any:
    """Parse YAML text strictly; ``source`` names it in errors."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        raise YamlError(f"{where}: not valid YAML: {getattr(e, 'problem', None) or e}") from None


def read_text(path: Path, what: str = "file") -> str:
    """A user file's text (UTF-8), with one-line errors for a missing, unreadable or binary file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise YamlError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise YamlError(f"{path}: is a directory, not a {what}") from None
    except OSError as e:
        raise YamlError(f"{path}: cannot read the {what}: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise YamlError(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
            f"save the {what} as UTF-8"
        ) from None


def load(path: Path, what: str = "file") -> Any:
    """Read and parse a YAML file strictly."""
    return loads(read_text(path, what), str(path))
