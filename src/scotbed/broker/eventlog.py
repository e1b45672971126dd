"""Buffered JSONL writer of the broker events of docs/design.md §5.

Every line is ``{"ts_ns": int, "node": str, "ev": str, ...}`` with ``ts_ns``
from :func:`time.time_ns`. Lines are serialised when the event happens (so
a later mutation of a message cannot change what was logged) and written in
chunks: when ``buffer_events`` lines are pending, on :meth:`flush` (periodic,
Admin.Flush, drain, SIGTERM) and on :meth:`close`. A path ending in ``.gz`` is
gzip-compressed; ``-`` is stdout. A crash can lose only the unflushed tail;
a graceful stop loses nothing because the runtime flushes after the last
message it acknowledged has been processed.

Event fields the analysis relies on:

- ``sub_in``/``sub_out``/``unsub_in``/``unsub_out``: ``sub_id``, ``link``; a ``sub_out`` or
  ``unsub_out`` whose message packs subscriptions (covering-packing) also ``packed``, how many it
  carries besides its own ``sub_id`` (:func:`packed_field`);
- ``notif_in``/``notif_out``: ``pub_id``, ``link``, ``hops`` (+ ``dynamic`` on ``notif_out``);
- ``match``: ``pub_id``, ``us``, ``n`` (+ ``steps``, PST nodes visited, with a tree engine);
  ``deliver``: ``pub_id``, ``sub_id``;
- ``queue``: ``link``, ``len``, ``ce`` (``link`` "" is the input queue); ``table``: ``size``;
- ``drop``: ``link``, ``reason``.

``link`` is the neighbour's broker id, or "" for a local client.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
#: a string as a JSON text, by the json module's own encoder (C), as ``_dumps`` writes strings
json_text: Callable[[str], str] = json.encoder.encode_basestring


def _value(v: Any) -> str:
    """``v`` as ``_dumps`` writes it; the scalars of the hot events without its per-call set-up."""
    t = type(v)
    if t is str:
        return json_text(v)
    if t is int:
        return int.__repr__(v)
    if t is bool:
        return "true" if v else "false"
    if t is float and math.isfinite(v):
        return float.__repr__(v)
    return _dumps(v)


def packed_field(msg: object) -> dict[str, int]:
    """``{"packed": n}`` for a message that packs ``n`` > 0 subscriptions, else ``{}``.

    One inter-broker message is one ``*_out`` event whatever it carries, so the subscriptions packed
    into it are counted on that event: the analysis can tell a packed unsubscription that carries
    released subscriptions (the selective-pruning paper's NRS messages) from a bare one.
    """
    n = len(getattr(msg, "packed", ()))
    return {"packed": n} if n else {}


def line_of(ts_ns: int, node_json: str, ev: str, fields: dict[str, Any]) -> str:
    """One JSONL line; field names are keyword names, which JSON takes as they are."""
    line = f'{{"ts_ns":{ts_ns},"node":{node_json},"ev":"{ev}"'
    for k, v in fields.items():
        line += f',"{k}":{_value(v)}'
    return line + "}\n"


class EventLog:
    def __init__(self, node: str, path: str = "-", buffer_events: int = 4096) -> None:
        self.node = node
        self.path = path
        self._node_json = _dumps(node)
        self._buffer: list[str] = []
        self._limit = max(1, buffer_events)
        self._lock = threading.Lock()  # emit() may run on gRPC threads in sync code paths
        self.written = 0
        self._closed = False
        self.on_pending: Callable[[], None] | None = None  # called when a line waits and none did before
        self._fh: IO[str]
        if path == "-":
            self._fh = sys.stdout
        else:
            p = Path(path)
            p.parent.mkdir(parents=True, exist_ok=True)
            if p.suffix == ".gz":
                self._fh = io.TextIOWrapper(gzip.open(p, "ab"), encoding="utf-8")  # noqa: SIM115 (long-lived)
            else:
                self._fh = p.open("a", encoding="utf-8")

    def emit(self, ev: str, **fields: Any) -> None:
        """Record one event now; ``fields`` must be JSON-serialisable scalars."""
        self._add(line_of(time.time_ns(), self._node_json, ev, fields))

    def emit_at(self, ts_ns: int, ev: str, **fields: Any) -> None:
        """Record one event stamped ``ts_ns`` (the test-data synthesiser writes a timeline this way)."""
        self._add(line_of(ts_ns, self._node_json, ev, fields))

    def _add(self, line: str) -> None:
        if not self._buffer and self.on_pending is not None:
            self.on_pending()
        self._buffer.append(line)
        if len(self._buffer) >= self._limit:
            self.flush()

    def flush(self) -> int:
        """Write every pending line; returns the number of lines written in total so far."""
        with self._lock:
            if self._buffer and not self._closed:
                chunk, self._buffer = self._buffer, []
                self._fh.write("".join(chunk))
                self._fh.flush()
                self.written += len(chunk)
            return self.written

    def close(self) -> None:
        self.flush()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._fh is not sys.stdout:
                self._fh.close()

    @property
    def pending(self) -> int:
        return len(self._buffer)


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """Parse a JSONL(.gz) event log written by :class:`EventLog` (strict: every line must parse)."""
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
