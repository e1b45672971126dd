"""One reader for the documents scotbed reads: specs and campaigns (YAML), plans and broker configs
(JSON, ``.gz`` = gzipped). Errors are the caller's :class:`~scotbed.errors.UserError` subclass and
name the file, and for a syntax error its line and column."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Literal

from scotbed.errors import UserError


def read_document(
    path: str | Path, what: str, error: type[UserError], fmt: Literal["json", "yaml"] = "json"
) -> Any:
    """The parsed content of ``path``, a ``what`` file (``spec``, ``plan``, ...)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise error(f"{p}: no such {what} file") from None
    except IsADirectoryError:
        raise error(f"{p}: is a directory, not a {what} file") from None
    if p.suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise error(f"{p}: not a gzip file: {e}") from None
    if fmt == "json":
        try:
            return json.loads(raw)
        except json.JSONDecodeError as e:
            raise error(f"{p}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
        except UnicodeDecodeError as e:
            raise error(f"{p}: not UTF-8 text: {e.reason}") from None
    import yaml  # only specs and campaigns are YAML; the broker reads JSON and never loads it

    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{p}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(p)
        raise error(f"{where}: not valid YAML: {getattr(e, 'problem', None) or e}") from None
