"""Per-link accounting on hand-made logs: each message attributed to the script line that caused it,
each publication's path, and the summary block."""

from __future__ import annotations

from collections import Counter
from typing import Any

from scotbed.analysis.links import ScriptOp, messages, per_operation, script_tables, summarise


def ev(ts: int, node: str, name: str, link: str = "", **ids: Any) -> dict[str, Any]:
    return {"ts_ns": ts, "node": node, "ev": name, "link": link, **ids}


EVENTS = [
    ev(10, "b1", "sub_in", sub_id="S"),  # arrivals and client hops are not inter-broker messages
    ev(11, "b1", "sub_out", "b2", sub_id="S"),
    ev(12, "b2", "sub_out", "b3", sub_id="S"),
    ev(20, "b3", "notif_in", pub_id="p"),
    ev(21, "b3", "notif_out", "b2", pub_id="p"),
    ev(22, "b2", "notif_out", "b1", pub_id="p"),
    ev(23, "b1", "deliver", pub_id="p", sub_id="S"),
    ev(31, "b1", "unsub_out", "b2", sub_id="S"),
    ev(32, "b2", "unsub_out", "b3", sub_id="S"),
    ev(33, "b2", "sub_out", "b3", sub_id="T"),  # released by the unsubscription: its line's message
    ev(41, "b2", "unsub_out", "b3", sub_id="T"),  # after the script (a stream closed at teardown)
]
OPS = [
    ScriptOp(3, "subscribe", "S", "b1", 10, 19),
    ScriptOp(4, "publish", "p", "b3", 20, 24),
    ScriptOp(5, "publish", "q", "b2", 25, 29),
    ScriptOp(7, "unsubscribe", "S", "b1", 30, 40),
]


def test_messages_are_attributed_to_the_line_that_started_before_them() -> None:
    msgs = messages(EVENTS)
    kinds = [(m.kind, m.id) for m in msgs]
    assert kinds == [("sub", "S")] * 2 + [("notif", "p")] * 2 + [("unsub", "S")] * 2 + [
        ("sub", "T"),
        ("unsub", "T"),
    ]
    assert per_operation(msgs, OPS) == {
        3: Counter({("sub", "b1", "b2"): 1, ("sub", "b2", "b3"): 1}),
        4: Counter({("notif", "b3", "b2"): 1, ("notif", "b2", "b1"): 1}),
        5: Counter(),
        7: Counter({("unsub", "b1", "b2"): 1, ("unsub", "b2", "b3"): 1, ("sub", "b2", "b3"): 1}),
    }


def test_the_report_tables_show_each_line_and_each_publication_path() -> None:
    tables = script_tables(messages(EVENTS), OPS)
    lines = tables["Messages per script line"].set_index("line")
    assert lines.loc[7, ["sub", "unsub", "notif"]].tolist() == [1, 2, 0]
    assert lines.loc[7, "links"] == "sub b2→b3, unsub b1→b2, unsub b2→b3"
    paths = tables["Path of each publication"].set_index("pub_id")
    assert paths.loc["p", "path"] == "b3→b2, b2→b1" and paths.loc["p", "links"] == 2
    assert paths.loc["q", "path"] == "" and paths.loc["q", "links"] == 0


def test_summary_block() -> None:
    assert summarise((1.5, 3), 6, 12, 3, 3).to_json() == {
        "per_publication": {"mean": 1.5, "max": 3},
        "subscription_messages": 6,
        "unsubscription_messages": 12,
        "subscription_messages_per_subscribe": 2.0,
        "unsubscription_messages_per_unsubscribe": 4.0,
    }
    assert summarise((0.0, 0), 0, 0, 0, 0).unsubscription_messages_per_unsubscribe == 0.0
