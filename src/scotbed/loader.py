"""One reader for the documents scotbed reads: specs and campaigns (YAML, parsed strictly by
:mod:`scotbed.yamlload`), plans and broker configs (JSON, ``.gz`` = gzipped), scripts (text). Errors
are the caller's :class:`~scotbed.errors.UserError` subclass and name the file, and for a syntax
error or a byte that is not UTF-8 its line."""

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
    raw = _read(p, what, error)
    if fmt == "json":
        try:
            return json.loads(raw)
        except json.JSONDecodeError as e:
            raise error(f"{p}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
        except UnicodeDecodeError as e:
            raise error(f"{p}: not UTF-8 text: {e.reason}") from None
    from scotbed import yamlload  # only specs and campaigns are YAML; the broker never loads it

    return yamlload.loads(decode(raw, str(p), f"{what} file", error), str(p), error)


def read_text(path: str | Path, what: str, error: type[UserError]) -> str:
    """The UTF-8 text of ``path``, a ``what`` file its own parser reads (a script)."""
    p = Path(path)
    return decode(_read(p, what, error), str(p), f"{what} file", error)


def _read(p: Path, what: str, error: type[UserError]) -> bytes:
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
    return raw


def decode(data: bytes, source: str, what: str, error: type[UserError]) -> str:
    """A user file's bytes as UTF-8 text; ``error`` names the line and byte offset of a bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise error(
            f"{source}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
            f"save the {what} as UTF-8"
        ) from None
