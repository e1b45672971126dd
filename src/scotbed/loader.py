"""One reader for the documents scotbed reads: specs and campaigns (YAML, parsed strictly by
:mod:`scotbed.yamlload`), plans and broker configs (JSON, ``.gz`` = gzipped), scripts (text). Errors
are the caller's exception class (a :class:`~scotbed.errors.UserError`, or a reader's own error
such as :class:`scotbed.workloads.quotes.CsvError`) and name the file, and for a syntax
error or a byte that is not UTF-8 its line.

Only a regular file of at most :data:`MAX_DOCUMENT_BYTES` (also once gunzipped) is read: a
device such as ``/dev/zero`` would be read without end, and opening a FIFO blocks until a
writer appears. A leading UTF-8 byte order mark is skipped. A document nested more deeply than
the parsers' recursion allows is an error too, not a ``RecursionError``."""

from __future__ import annotations

import codecs
import gzip
import io
import json
import stat
from pathlib import Path
from typing import Any, Literal

from scotbed.errors import TOO_DEEP

#: the most bytes a spec, campaign, plan, broker config, script, edge list or quote CSV may hold
#: (after gunzipping)
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024


def read_document(
    path: str | Path, what: str, error: type[Exception], fmt: Literal["json", "yaml"] = "json"
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
        except ValueError as e:  # a number of more digits than int() converts
            raise error(f"{p}: not valid JSON: {e}") from None
        except RecursionError:
            raise error(f"{p}: {TOO_DEEP}") from None
    from scotbed import yamlload  # only specs and campaigns are YAML; the broker never loads it

    return yamlload.loads(decode(raw, str(p), f"{what} file", error), str(p), error)


def read_text(path: str | Path, what: str, error: type[Exception]) -> str:
    """The UTF-8 text of ``path``, a ``what`` file its own parser reads (a script)."""
    p = Path(path)
    return decode(_read(p, what, error), str(p), f"{what} file", error)


def _read(p: Path, what: str, error: type[Exception]) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_DOCUMENT_BYTES`, gunzipped for ``.gz``."""
    try:
        mode = p.stat().st_mode
    except FileNotFoundError:
        raise error(f"{p}: no such {what} file") from None
    except OSError as e:
        raise error(f"{p}: cannot read the {what} file: {e.strerror}") from None
    except ValueError:  # a NUL byte in the name
        raise error(f"{str(p)!r}: not a file name (it contains a NUL byte)") from None
    if stat.S_ISDIR(mode):
        raise error(f"{p}: is a directory, not a {what} file")
    if not stat.S_ISREG(mode):
        raise error(f"{p}: not a regular file (a device, FIFO or socket); a {what} file must be one")
    try:
        with p.open("rb") as f:
            raw = _bounded(f, p, what, error)
    except OSError as e:
        raise error(f"{p}: cannot read the {what} file: {e.strerror}") from None
    if p.suffix == ".gz":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as g:
                raw = _bounded(g, p, what, error)
        except (OSError, EOFError) as e:
            raise error(f"{p}: not a gzip file: {e}") from None
    return raw


def _bounded(f: io.BufferedIOBase, p: Path, what: str, error: type[Exception]) -> bytes:
    """What ``f`` holds, read no further than one byte past the limit."""
    raw = f.read(MAX_DOCUMENT_BYTES + 1)
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise error(f"{p}: more than {MAX_DOCUMENT_BYTES} bytes; a {what} file may hold at most that")
    return raw


def decode(data: bytes, source: str, what: str, error: type[Exception]) -> str:
    """A user file's bytes as UTF-8 text, a leading byte order mark skipped; ``error`` names the line
    and byte offset of a bad byte."""
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as e:
        at = bom + e.start
        line = data[:at].count(b"\n") + 1
        raise error(
            f"{source}:{line}: not UTF-8 text (byte 0x{data[at]:02x} at offset {at}); "
            f"save the {what} as UTF-8"
        ) from None
