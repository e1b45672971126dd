"""Strict YAML parsing for user files (specs, campaigns, scripts, ``--set`` values).

``yaml.safe_load`` lets a duplicated key silently win and reports a file
that is not UTF-8 as a Python traceback. Here a duplicate key is an error
naming the key and both lines, and undecodable bytes are an error naming
the byte offset; every problem is a :class:`~scotbed.errors.UserError`
whose message starts with ``file:line:column``. Files are read (and
decoded) by :func:`scotbed.loader.read_document`, which parses YAML here.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from scotbed.errors import TOO_DEEP, UserError


class YamlError(UserError):
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


def loads(text: str, source: str, error: type[Exception] = YamlError) -> Any:
    """Parse YAML text strictly; ``source`` names it in errors, raised as ``error``."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        raise error(f"{where}: not valid YAML: {getattr(e, 'problem', None) or e}") from None
    except RecursionError:
        raise error(f"{source}: not valid YAML: {TOO_DEEP}") from None
    except ValueError as e:  # an integer of more digits than int() converts
        raise error(f"{source}: not valid YAML: {e}") from None
