"""The publish phase's live figures: what the line says from the brokers' Status and the workload's
status, how often each reporter shows it, and the background poller that asks real brokers."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from scotbed import topology
from scotbed.broker.client import BrokerClient
from scotbed.broker.launcher import LocalCluster
from scotbed.broker.statuspoll import StatusPoller
from scotbed.orchestrator.livestats import figures
from scotbed.orchestrator.progress import PLAIN_EVERY_S, Every, JsonProgress, QuietProgress, RichProgress
from scotbed.v1 import scotbed_pb2 as pb

# the workload's status document (locust/status.json); only its publisher counts are figures
WORKLOAD = {"phase": "publishing", "publishers": 3, "publishers_done": 1, "received": 17}


def _reply(
    bid: str, pub: int, deliver: int, input_len: int, links: dict[str, int], lag: float
) -> pb.StatusReply:
    return pb.StatusReply(
        broker_id=bid,
        input_len=input_len,
        counters={"client_pub": pub, "deliver": deliver, "notif_in": 99},
        links=[pb.LinkStatus(neighbour=n, output_len=q) for n, q in links.items()],
        loop_lag_ms_max=lag,
    )


def test_the_figures_sum_the_brokers_counters_and_name_the_largest_queue_and_the_worst_lag() -> None:
    replies = {
        "b-v0-0": _reply("b-v0-0", 40, 5, 2, {"b-v1-0": 3}, 1.25),
        "b-v1-0": _reply("b-v1-0", 0, 12, 1, {"b-v0-0": 0, "b-v2-0": 9}, 7.5),
        "b-v2-0": _reply("b-v2-0", 20, 3, 4, {"b-v1-0": 0}, 0.0),
    }
    f = figures(replies, WORKLOAD, expected=300, brokers=3)
    assert (f.published, f.expected, f.delivered) == (60, 300, 20)
    assert (f.largest_queue, f.largest_queue_at) == (9, "b-v1-0→b-v2-0")
    assert (f.worst_lag_ms, f.worst_lag_at) == (7.5, "b-v1-0")
    assert f.text() == (
        "published 60/300, delivered 20, largest queue 9 (b-v1-0→b-v2-0), "
        "worst loop lag 7.5 ms (b-v1-0), publishers done 1/3"
    )
    assert json.loads(json.dumps(f.fields()))["largest_queue_at"] == "b-v1-0→b-v2-0"


def test_a_broker_that_did_not_answer_is_named_as_missing_from_the_figures() -> None:
    replies = {"b-v0-0": _reply("b-v0-0", 4, 0, 6, {}, 0.0)}
    f = figures(replies, WORKLOAD, expected=10, brokers=3)
    assert (f.largest_queue_at, f.worst_lag_at) == ("b-v0-0", "")  # an input queue; no lag anywhere
    assert f.text().endswith(
        "largest queue 6 (b-v0-0), worst loop lag 0.0 ms, publishers done 1/3, 1/3 brokers answered"
    )
    nobody = figures({}, WORKLOAD, expected=10, brokers=3)
    assert nobody.text() == "no broker answered Status yet, publishers done 1/3"
    idle = figures({"b-v0-0": _reply("b-v0-0", 0, 0, 0, {"b-v1-0": 0}, 0.0)}, {}, expected=10, brokers=1)
    assert idle.text() == (
        "published 0/10, delivered 0, largest queue 0, worst loop lag 0.0 ms, publishers done 0/0"
    )


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_every_is_due_once_per_period_starting_one_period_in() -> None:
    clock = Clock()
    every = Every(2.0, clock)
    seen = []
    for _ in range(12):  # 0.5 s steps over 6 s
        clock.now += 0.5
        seen.append(every.due())
    assert [i for i, due in enumerate(seen) if due] == [3, 7, 11]  # at 2 s, 4 s, 6 s


def test_off_a_terminal_the_live_figures_are_a_plain_line_every_period(
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = Clock()
    progress = RichProgress(clock=clock)
    with progress.phase("publish") as ph:
        for k in range(10):  # 5 s of polls, every 0.5 s
            clock.now += 0.5
            ph.update("publishing: 0/2 publishers and 0/6 subscribers done")
            ph.live(f"published {k}/10 [not markup]", {"published": k})
        ph.update("2/2 publishers and 6/6 subscribers done")
    lines = capsys.readouterr().err.splitlines()
    assert [x.split(") ", 1)[1] for x in lines[:-1]] == [
        "published 3/10 [not markup]",
        "published 7/10 [not markup]",
    ]
    assert all(x.startswith("… publish (") for x in lines[:-1])
    assert lines[-1].startswith("✓ publish (") and lines[-1].endswith(
        ") 2/2 publishers and 6/6 subscribers done"
    )


def test_log_json_gives_the_same_figures_as_progress_events(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    progress = JsonProgress(clock=clock)
    with progress.phase("publish") as ph:
        for k in range(10):
            clock.now += PLAIN_EVERY_S / 4
            ph.live("text", {"published": k, "expected": 10})
    events = [json.loads(x) for x in capsys.readouterr().err.splitlines()]
    assert [e["event"] for e in events] == ["phase_start", "progress", "progress", "phase_done"]
    assert [(e["phase"], e["published"], e["expected"]) for e in events[1:3]] == [
        ("publish", 3, 10),
        ("publish", 7, 10),
    ]


def test_quiet_shows_no_figures_and_says_it_needs_none(capsys: pytest.CaptureFixture[str]) -> None:
    from scotbed.orchestrator.campaign_command import CellProgress

    progress = QuietProgress()
    assert not progress.shows_live and RichProgress().shows_live and JsonProgress().shows_live
    assert not CellProgress(progress, "1/2 routing=snr").shows_live  # a campaign's cell: as its command
    with progress.phase("publish") as ph:
        ph.live("published 1/2", {"published": 1})
    assert capsys.readouterr() == ("", "")


@pytest.mark.slow
def test_the_poller_asks_real_brokers_and_leaves_out_one_that_does_not_answer(tmp_path: Path) -> None:
    scot = topology.tree(topology.path(2))
    with LocalCluster.from_topology(scot, tmp_path, routing="rpf", matching="counting") as cluster:
        addresses = {**cluster.addresses(), "b-gone": "127.0.0.1:1"}  # nothing listens there

        async def publish() -> int:
            async with BrokerClient(cluster.address("b-v0-0")) as c:
                return await c.publish([(f"p{k}", {"price": k}) for k in range(3)], publisher="pub")

        assert asyncio.run(publish()) == 3
        with StatusPoller(addresses, interval_s=0.2, timeout_s=0.5) as poller:
            deadline = time.monotonic() + 30
            while poller.rounds < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            latest = poller.latest()
        assert poller.rounds >= 2 and sorted(latest) == ["b-v0-0", "b-v1-0"]
        stopped = time.monotonic()
        poller.stop()  # stopping again is immediate
        assert time.monotonic() - stopped < 0.5
    f = figures(latest, {"publishers": 1}, expected=3, brokers=len(addresses))
    assert (f.published, f.answered, f.brokers) == (3, 2, 3)
    assert f.text().endswith("2/3 brokers answered")
