"""The propagation trace (:mod:`scotbed.analysis.propagation`) on broker logs as brokers write them.

``PATH5`` holds the subscription traffic of A and B from a real covering-active run of
experiments/known-answer/path5 (brokers b-v0-0 … b-v4-0 on a path): A (x in [0, 100]) at b-v0-0
covers B (x in [10, 20]) at b-v1-0, so b-v1-0 holds B back from b-v2-0 until A's unsubscription
releases it there, and on to b-v3-0 and b-v4-0 (each of which had held it under A in turn).
"""

from __future__ import annotations

import json

from scotbed.analysis import propagation
from scotbed.analysis.propagation import Row

PATH5 = """
{"ts_ns":1795829823231269550,"node":"b-v0-0","ev":"sub_in","sub_id":"A","link":"","hops":0}
{"ts_ns":1795829823231430390,"node":"b-v0-0","ev":"sub_out","sub_id":"A","link":"b-v1-0","hops":0}
{"ts_ns":1795829823694052363,"node":"b-v0-0","ev":"sub_in","sub_id":"B","link":"b-v1-0","hops":1}
{"ts_ns":1795829825799598428,"node":"b-v0-0","ev":"unsub_in","sub_id":"A","link":"","hops":0}
{"ts_ns":1795829826632389759,"node":"b-v0-0","ev":"unsub_in","sub_id":"B","link":"b-v1-0","hops":1}
{"ts_ns":1795829823231903226,"node":"b-v1-0","ev":"sub_in","sub_id":"A","link":"b-v0-0","hops":1}
{"ts_ns":1795829823232059809,"node":"b-v1-0","ev":"sub_out","sub_id":"A","link":"b-v2-0","hops":1}
{"ts_ns":1795829823692224406,"node":"b-v1-0","ev":"sub_in","sub_id":"B","link":"","hops":0}
{"ts_ns":1795829823692368170,"node":"b-v1-0","ev":"sub_out","sub_id":"B","link":"b-v0-0","hops":0}
{"ts_ns":1795829825800172875,"node":"b-v1-0","ev":"unsub_in","sub_id":"A","link":"b-v0-0","hops":1}
{"ts_ns":1795829825800399874,"node":"b-v1-0","ev":"sub_out","sub_id":"B","link":"b-v2-0","hops":0}
{"ts_ns":1795829826631850585,"node":"b-v1-0","ev":"unsub_in","sub_id":"B","link":"","hops":0}
{"ts_ns":1795829823232448790,"node":"b-v2-0","ev":"sub_in","sub_id":"A","link":"b-v1-0","hops":2}
{"ts_ns":1795829823232596931,"node":"b-v2-0","ev":"sub_out","sub_id":"A","link":"b-v3-0","hops":2}
{"ts_ns":1795829825800950265,"node":"b-v2-0","ev":"sub_in","sub_id":"B","link":"b-v1-0","hops":1}
{"ts_ns":1795829825801062342,"node":"b-v2-0","ev":"unsub_in","sub_id":"A","link":"b-v1-0","hops":2}
{"ts_ns":1795829825801169742,"node":"b-v2-0","ev":"sub_out","sub_id":"B","link":"b-v3-0","hops":1}
{"ts_ns":1795829826632936175,"node":"b-v2-0","ev":"unsub_in","sub_id":"B","link":"b-v1-0","hops":1}
{"ts_ns":1795829823241369181,"node":"b-v3-0","ev":"sub_in","sub_id":"A","link":"b-v2-0","hops":3}
{"ts_ns":1795829823241507888,"node":"b-v3-0","ev":"sub_out","sub_id":"A","link":"b-v4-0","hops":3}
{"ts_ns":1795829825801920762,"node":"b-v3-0","ev":"sub_in","sub_id":"B","link":"b-v2-0","hops":2}
{"ts_ns":1795829825802039980,"node":"b-v3-0","ev":"unsub_in","sub_id":"A","link":"b-v2-0","hops":3}
{"ts_ns":1795829825802151827,"node":"b-v3-0","ev":"sub_out","sub_id":"B","link":"b-v4-0","hops":2}
{"ts_ns":1795829826633586455,"node":"b-v3-0","ev":"unsub_in","sub_id":"B","link":"b-v2-0","hops":2}
{"ts_ns":1795829823242763973,"node":"b-v4-0","ev":"sub_in","sub_id":"A","link":"b-v3-0","hops":4}
{"ts_ns":1795829825802777041,"node":"b-v4-0","ev":"sub_in","sub_id":"B","link":"b-v3-0","hops":3}
{"ts_ns":1795829825802865984,"node":"b-v4-0","ev":"unsub_in","sub_id":"A","link":"b-v3-0","hops":4}
{"ts_ns":1795829826634203346,"node":"b-v4-0","ev":"unsub_in","sub_id":"B","link":"b-v3-0","hops":3}
"""


def rows(text: str) -> list[Row]:
    events = [json.loads(line) for line in text.split("\n") if line]
    return [(e["ts_ns"], e["node"], e["ev"], e["sub_id"], e["link"]) for e in events]


def test_a_reforward_is_no_part_of_the_wave() -> None:
    """B settled when it reached b-v0-0 (b-v1-0's only sub_out of it while it handled B's subscribe):
    the sub_outs A's unsubscription caused at b-v1-0, b-v2-0 and b-v3-0 are a re-forward."""
    assert propagation.wave_ends(rows(PATH5)) == {"A": [1795829823242763973], "B": [1795829823694052363]}
    assert propagation.unsub_ends(rows(PATH5)) == {"A": 1795829825802865984, "B": 1795829826634203346}


def test_without_its_clients_sub_in_a_wave_starts_at_the_earliest_sub_in() -> None:
    """The home broker's log lost B's subscribe: B's one wave starts at its earliest logged sub_in."""
    lost = [r for r in rows(PATH5) if not (r[2] == "sub_in" and r[3] == "B" and r[4] == "")]
    assert propagation.wave_ends(lost)["B"] == [1795829823694052363]


def test_a_tie_keeps_the_log_order() -> None:
    """A coarse clock stamps T's handling and the next sub_in (of S) the same ns: the log order still
    gives T's sub_out to T's sub_in."""
    log: list[Row] = [
        (10, "x", "sub_in", "T", ""),
        (10, "x", "sub_out", "T", "y"),
        (10, "x", "sub_in", "S", ""),
        (10, "x", "sub_out", "S", "y"),
        (20, "y", "sub_in", "T", "x"),
        (21, "y", "sub_in", "S", "x"),
    ]
    assert propagation.wave_ends(log) == {"T": [20], "S": [21]}


def test_a_subscriptions_delay_ends_with_its_own_wave_not_a_reforward() -> None:
    """B's subscribe settled when it reached b-v0-0; A's unsubscription re-forwarded B up to b-v4-0
    2.1 s later, which the last ``sub_in`` would have counted as B's delay."""
    import pandas as pd

    from scotbed.analysis.metrics import stored_at_first_wave

    issued = {"A": 1795829823231000000, "B": 1795829823692000000}
    last_in = {"A": 1795829823242763973, "B": 1795829825802777041}
    subs = pd.DataFrame(
        {
            "sub_id": ["A", "B", "C"],
            "issued_ns": [issued["A"], issued["B"], 10],
            "stored_ns": [last_in["A"], last_in["B"], 30],  # C: no traced wave, its last sub_in stays
        }
    )
    out = stored_at_first_wave(subs, propagation.wave_ends(rows(PATH5)))
    assert list(out["stored_ns"]) == [1795829823242763973, 1795829823694052363, 30]
    assert list(out["delay_ms"]) == [
        (1795829823242763973 - issued["A"]) / 1e6,
        (1795829823694052363 - issued["B"]) / 1e6,
        20 / 1e6,
    ]
