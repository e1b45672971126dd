"""One reader for the documents scotbed reads: specs and campaigns (YAML, parsed strictly by
:mod:`scotbed.yamlload`), plans and broker configs (JSON, ``.gz`` = gzipped). Errors are the
caller's :class:`~scotbed.errors.UserError` subclass and name the file, and for a syntax error its
line and column."""

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
    except OSError as e:
        raise error(f"{p}: cannot read the {what} file: {e.strerror}") from None
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
    from scotbed import yamlload  # only specs and campaigns are YAML; the broker never loads it

    return yamlload.loads(yamlload.decode(raw, str(p), f"{what} file", error), str(p), error)
