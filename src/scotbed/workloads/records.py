"""What a workload process writes: client event logs and the workload files (docs/design.md §5).

Every Locust worker process writes its own files, so no two processes share a
file (on Kubernetes they do not even share a disk):

- ``events/<process>.jsonl``: ``subscribe``/``unsubscribe`` (sub_id), ``publish`` (pub_id,
  intended_ns, sent_ns; ts_ns = sent) and ``receive`` (pub_id, sub_id, hops, broker_ns;
  ts_ns = receive time) events, ``node`` = the client (subscriber or publisher) name;
- ``workload/subscriptions.<process>.jsonl`` and ``workload/publications.<process>.jsonl``:
  what was issued, with content.

:func:`merge_workload` joins the per-process workload parts into the
contract's ``workload/subscriptions.jsonl`` and ``workload/publications.jsonl``
(sorted by ts_ns, then id) and removes the parts; the local runner calls it,
a Kubernetes backend calls it after collecting the parts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from scotbed import contract
from scotbed.broker.eventlog import json_text, line_of
from scotbed.filters import Filter


class JsonlWriter:
    """Buffered JSON-lines file; ``flush`` writes what is buffered (cheap enough to call every 200 ms).
    With ``max_buffered`` a write that fills the buffer flushes it (a writer nobody flushes on a timer)."""

    def __init__(self, path: Path, max_buffered: int | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._f: TextIO | None = path.open("a", encoding="utf-8")
        self._buf: list[str] = []
        self._max = max_buffered
        self.count = 0

    def write(self, record: dict[str, Any]) -> None:
        self.write_line(json.dumps(record, separators=(",", ":")) + "\n")

    def write_line(self, line: str) -> None:
        """One line already encoded, with its newline."""
        self._buf.append(line)
        self.count += 1
        if self._max is not None and len(self._buf) >= self._max:
            self.flush()

    def flush(self) -> None:
        if self._buf and self._f is not None:
            self._f.write("".join(self._buf))
            self._f.flush()
            self._buf.clear()

    def close(self) -> None:
        self.flush()
        if self._f is not None:
            self._f.close()
            self._f = None


class ProcessRecords:
    """The three files of one workload process under ``run_dir``."""

    def __init__(self, run_dir: Path, process: str, max_buffered: int | None = None) -> None:
        self.process = process
        self.events = JsonlWriter(run_dir / contract.events_file(process), max_buffered)
        self.subscriptions = JsonlWriter(
            run_dir / contract.workload_part("subscriptions", process), max_buffered
        )
        self.publications = JsonlWriter(
            run_dir / contract.workload_part("publications", process), max_buffered
        )
        self.receives = 0  # deliveries read from the brokers' streams so far (the drain waits for them)

    def event(self, ts_ns: int, node: str, ev: str, **fields: Any) -> None:
        """One client event, encoded as a broker's event line (one per delivery: the hot path)."""
        self.events.write_line(line_of(ts_ns, json_text(node), ev, fields))

    def subscription(
        self, ts_ns: int, op: str, sub_id: str, subscriber: str, broker: str, flt: Filter, **fields: Any
    ) -> None:
        """A ``subscribe``/``unsubscribe`` sent at ``ts_ns``: its client event (with ``fields``, e.g.
        ``ack_ns``) and its ``workload/subscriptions`` line."""
        self.event(ts_ns, subscriber, op, sub_id=sub_id, broker=broker, **fields)
        self.subscriptions.write(
            {"ts_ns": ts_ns, "op": op, "sub_id": sub_id, "subscriber": subscriber, "broker": broker,
             "filter": flt.to_json()}
        )  # fmt: skip

    def publication(
        self, sent_ns: int, intended_ns: int, pub_id: str, publisher: str, broker: str, attrs: dict[str, Any]
    ) -> None:
        """A notification sent at ``sent_ns``: its ``publish`` event and its ``workload/publications``
        line."""
        self.event(sent_ns, publisher, contract.PUBLISH, pub_id=pub_id, intended_ns=intended_ns,
                   sent_ns=sent_ns, broker=broker)  # fmt: skip
        self.publications.write(
            {"ts_ns": sent_ns, "intended_ns": intended_ns, "pub_id": pub_id, "publisher": publisher,
             "broker": broker, "attrs": attrs}
        )  # fmt: skip

    def receive(
        self, ts_ns: int, subscriber: str, pub_id: str, sub_id: str, hops: int, broker_ns: int, broker: str
    ) -> None:
        """A delivery that reached ``subscriber`` at ``ts_ns``."""
        self.receives += 1
        self.event(ts_ns, subscriber, contract.RECEIVE, pub_id=pub_id, sub_id=sub_id, hops=hops,
                   broker_ns=broker_ns, broker=broker)  # fmt: skip

    def flush(self) -> None:
        for w in (self.events, self.subscriptions, self.publications):
            w.flush()

    def close(self) -> None:
        for w in (self.events, self.subscriptions, self.publications):
            w.close()


def merge_workload(run_dir: str | Path) -> dict[str, int]:
    """Join ``workload/<kind>.<process>.jsonl`` parts into ``workload/<kind>.jsonl``; returns line counts."""
    wdir = Path(run_dir) / contract.WORKLOAD_DIR
    counts: dict[str, int] = {}
    for kind in contract.WORKLOAD_KINDS:
        parts = sorted(wdir.glob(f"{kind}.*.jsonl"))
        target = wdir / f"{kind}.jsonl"
        rows: list[tuple[int, str, str]] = []
        if target.exists():
            parts.insert(0, target)
        for part in parts:
            for line in part.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    d = json.loads(line)
                    rows.append((int(d["ts_ns"]), str(d.get("sub_id") or d.get("pub_id")), line))
        rows.sort()
        wdir.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(r[2] + "\n" for r in rows), encoding="utf-8")
        tmp.replace(target)
        for part in parts:
            if part != target:
                part.unlink()
        counts[kind] = len(rows)
    return counts
