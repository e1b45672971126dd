"""Per-link accounting: which inter-broker message crossed which directed link, and for what.

Every inter-broker message is one ``*_out`` event of its sender (docs/design.md §9),
with ``link`` = the receiving neighbour. Two tables come out of the logs:

- ``link_notifications``: (pub_id, from, to, dynamic) for every notification copy;
- ``link_subscriptions``: (sub_id, kind, from, to) for every subscription (``sub``) and
  unsubscription (``unsub``) message; packed subscriptions travel inside their one
  message and are not rows of their own.

Summary (``summary.json`` → ``links``): the links a publication crossed (mean and max over
every published notification, a publication that never left its broker counting 0), and
subscription/unsubscription messages per subscribe/unsubscribe operation (the messages of
each kind over the operations of that kind: a covering subscription re-sent when its coverer
leaves counts as a subscription message).

For a scripted run (``workload/script_ops.jsonl``, :mod:`scotbed.workloads.script_runner`)
every message is attributed to the script line whose operation caused it: each line settles
before the next starts, so a message logged from one line's start to the next line's start
(for the last line: to the end of the script's final settle) belongs to that line; what the
brokers log after the script (e.g. streams closed at teardown) belongs to no line. The report
then shows the messages of each line and the path each publication took.

The pure functions take event dicts (tests use them on real broker logs, no Spark); the
analysis runs :func:`analyse` on the run's Spark events.
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from scotbed import contract
from scotbed.analysis.summary import Links

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import DataFrame

    from scotbed.analysis.rundir import RunDir

    #: writes a table under ``analysis/`` by name and returns what later queries read
    #: (:meth:`scotbed.analysis.context.RunData.written`)
    TableWriter = Callable[[DataFrame, str], DataFrame]

#: the event of each message kind (the sender's ``*_out``)
KINDS = {contract.NOTIF_OUT: "notif", contract.SUB_OUT: "sub", contract.UNSUB_OUT: "unsub"}


@dataclass(frozen=True)
class Message:
    kind: str  # notif, sub, unsub
    id: str  # pub_id or sub_id
    src: str
    dst: str
    ts_ns: int


@dataclass(frozen=True)
class ScriptOp:
    line: int
    op: str
    id: str
    broker: str
    start_ns: int
    end_ns: int


def messages(events: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Every inter-broker message of the logs, in time order."""
    out = [
        Message(
            KINDS[e["ev"]], str(e.get("pub_id") or e.get("sub_id") or ""), e["node"], e["link"], e["ts_ns"]
        )
        for e in events
        if e.get("ev") in KINDS and e.get("link")
    ]
    return sorted(out, key=lambda m: (m.ts_ns, m.src, m.dst))


def read_ops(path: Path) -> list[ScriptOp]:
    """The executed script lines (``workload/script_ops.jsonl``), in the order they ran."""
    if not path.exists():
        return []
    docs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    ops = [
        ScriptOp(int(d["line"]), d["op"], d["id"], d["broker"], int(d["start_ns"]), int(d["end_ns"]))
        for d in docs
    ]
    return sorted(ops, key=lambda o: o.start_ns)


def attribute(msgs: Sequence[Message], ops: Sequence[ScriptOp]) -> list[int | None]:
    """The script line of each message: the last operation that started before it was sent; none
    before the first line or after the last line's end (the script's final settle)."""
    starts = [o.start_ns for o in ops]
    lines: list[int | None] = []
    for m in msgs:
        k = bisect.bisect_right(starts, m.ts_ns) - 1
        after_end = k == len(ops) - 1 and m.ts_ns > ops[k].end_ns
        lines.append(ops[k].line if k >= 0 and not after_end else None)
    return lines


def per_operation(
    msgs: Sequence[Message], ops: Sequence[ScriptOp]
) -> dict[int, Counter[tuple[str, str, str]]]:
    """line -> Counter of (kind, from, to): the messages each script line caused, per directed link."""
    out: dict[int, Counter[tuple[str, str, str]]] = {o.line: Counter() for o in ops}
    for m, line in zip(msgs, attribute(msgs, ops), strict=True):
        if line is not None:
            out[line][(m.kind, m.src, m.dst)] += 1
    return out


def paths(msgs: Iterable[Message]) -> dict[str, list[tuple[str, str]]]:
    """pub_id -> the directed links its copies crossed, in the order they were sent."""
    out: dict[str, list[tuple[str, str]]] = {}
    for m in msgs:
        if m.kind == "notif":
            out.setdefault(m.id, []).append((m.src, m.dst))
    return out


def path_text(links: Sequence[tuple[str, str]]) -> str:
    """Copies as ``a→b, b→c``; empty when the publication never left its broker."""
    return ", ".join(f"{a}→{b}" for a, b in links)


def script_tables(msgs: Sequence[Message], ops: Sequence[ScriptOp]) -> dict[str, pd.DataFrame]:
    """The report's tables for a scripted run: messages per line, and the path of each publication."""
    counted = per_operation(msgs, ops)
    rows = []
    for o in ops:
        c = counted[o.line]
        n = Counter(kind for kind, _, _ in c.elements())
        rows.append(
            {"line": o.line, "op": o.op, "id": o.id, "broker": o.broker, "sub": n["sub"], "unsub": n["unsub"],
             "notif": n["notif"], "links": ", ".join(f"{k} {a}→{b}" + (f" ×{x}" if x > 1 else "")
                                                     for (k, a, b), x in sorted(c.items()))}
        )  # fmt: skip
    pub_paths = paths(msgs)
    pubs = [
        {"line": o.line, "pub_id": o.id, "broker": o.broker, "links": len(pub_paths.get(o.id, [])),
         "path": path_text(pub_paths.get(o.id, []))}
        for o in ops
        if o.op == "publish"
    ]  # fmt: skip
    return {
        "Messages per script line": pd.DataFrame(rows),
        "Path of each publication": pd.DataFrame(pubs),
    }


def summarise(
    per_pub: tuple[float, int], sub_msgs: int, unsub_msgs: int, subscribes: int, unsubscribes: int
) -> Links:
    """The ``links`` section of summary.json; ``per_pub`` = (mean, max) links crossed per publication."""
    return Links(
        per_publication={"mean": per_pub[0], "max": per_pub[1]},
        subscription_messages=sub_msgs,
        unsubscription_messages=unsub_msgs,
        subscription_messages_per_subscribe=sub_msgs / subscribes if subscribes else 0.0,
        unsubscription_messages_per_unsubscribe=unsub_msgs / unsubscribes if unsubscribes else 0.0,
    )


# --- on the run's Spark events -----------------------------------------------------------------


def analyse(
    events: DataFrame, pub_times: DataFrame, run: RunDir, sent: Mapping[str, int], write: TableWriter
) -> tuple[Links, dict[str, pd.DataFrame]]:
    """Write the two link tables under ``analysis/`` with ``write``; return the summary block and, for
    a scripted run, the report tables. ``pub_times`` has one row per published notification
    (``pub_id``); ``sent`` counts the messages of each ``*_out`` event to another broker (the per-broker
    facts'). The copies per publication are counted from what ``write`` returns for their table."""
    from pyspark.sql import functions as F

    from scotbed.analysis.metrics import of, to_broker

    msgs = of(events, *KINDS).where(to_broker())
    notif = msgs.where(F.col("ev") == contract.NOTIF_OUT).select(
        "pub_id", F.col("node").alias("from"), F.col("link").alias("to"),
        F.coalesce(F.col("dynamic"), F.lit(False)).alias("dynamic"), "ts_ns",
    )  # fmt: skip
    subs = msgs.where(F.col("ev") != contract.NOTIF_OUT).select(
        "sub_id", F.when(F.col("ev") == contract.SUB_OUT, "sub").otherwise("unsub").alias("kind"),
        F.col("node").alias("from"), F.col("link").alias("to"), "ts_ns",
    )  # fmt: skip
    copies = write(notif, "link_notifications")
    write(subs, "link_subscriptions")
    per_pub = (
        pub_times.select("pub_id")
        .join(copies.groupBy("pub_id").agg(F.count("*").alias("links")), "pub_id", "left")
        .agg(F.avg(F.coalesce("links", F.lit(0))), F.max(F.coalesce("links", F.lit(0))))
        .first()
    )
    mean_max = (float(per_pub[0] or 0.0), int(per_pub[1] or 0)) if per_pub else (0.0, 0)
    kinds = Counter({KINDS[ev]: int(n) for ev, n in sent.items() if ev in KINDS})
    ops = Counter(str(d.get("op")) for d in run.subscription_ops())
    block = summarise(mean_max, kinds["sub"], kinds["unsub"], ops["subscribe"], ops["unsubscribe"])

    script_ops = read_ops(run.path / contract.SCRIPT_OPS)
    if not script_ops:
        return block, {}
    rows = msgs.select("ts_ns", "node", "ev", "link", "pub_id", "sub_id").collect()
    return block, script_tables(messages(r.asDict() for r in rows), script_ops)
