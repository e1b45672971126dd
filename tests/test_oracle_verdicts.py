"""`scotbed analyze`'s verdict cannot be fooled (real Spark; the CLI in process, or in a subprocess):

- a covering re-forward at the end of a run does not excuse a subscriber whose receives are gone;
- a run whose correctness could not be checked (no subscription workload) exits nonzero, saying why;
- a broker event log with lost lines (garbled, or cut mid-line) fails the verdict, naming the log and
  its count, unless the run killed that broker on purpose.

The runs are synthesised (:mod:`scotbed.analysis.synth`, written by the brokers' own log writer); what a
test adds to a broker log is written by that writer too, so its lines are shaped as brokers write them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scotbed_cli import scotbed

from scotbed import contract
from scotbed.analysis import cli
from scotbed.analysis.synth import SynthSpec, synthesise
from scotbed.broker.eventlog import EventLog

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SPEC = SynthSpec(brokers=4, subscribers=8, symbols=3, publications=60)  # a path b-v0-0 … b-v3-0, rpf
MS = 1_000_000
ROOT = Path(__file__).resolve().parent.parent


def _events(run: Path, process: str) -> list[dict[str, Any]]:
    path = run / contract.events_file(process)
    return [json.loads(line) for line in path.read_text().splitlines()]


def _worker_logs(run: Path) -> list[Path]:
    return sorted((run / contract.EVENTS_DIR).glob("worker-*.jsonl"))


def _summary(run: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((run / contract.SUMMARY).read_text())
    return doc


def _analyze(run: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`scotbed analyze RUN` in this process (it joins the module's Spark session): (exit, stderr)."""
    code = cli.main([str(run)])
    return code, capsys.readouterr().err


def _reforward(run: Path, sub_id: str, at: str, to: str, other: str) -> None:
    """At the end of the run, broker ``at`` handles the unsubscription of ``other`` and releases
    ``sub_id`` to its neighbour ``to`` (covering's re-forward), as both brokers log it."""
    last = max(
        e["ts_ns"] for f in (run / contract.EVENTS_DIR).glob("*.jsonl") for e in map(json.loads, f.open())
    )
    sender = EventLog(at, str(run / contract.events_file(at)))
    sender.emit_at(last + MS, contract.UNSUB_IN, sub_id=other, link=to, hops=1)
    sender.emit_at(last + MS + 1000, contract.SUB_OUT, sub_id=sub_id, link=to, hops=0)
    sender.close()
    receiver = EventLog(to, str(run / contract.events_file(to)))
    receiver.emit_at(last + 2 * MS, contract.SUB_IN, sub_id=sub_id, link=at, hops=1)
    receiver.close()


def _drop_receives(run: Path, sub_id: str) -> int:
    dropped = 0
    for f in _worker_logs(run):
        lines = f.read_text().splitlines(keepends=True)
        kept = [
            x
            for x in lines
            if not (json.loads(x)["ev"] == contract.RECEIVE and json.loads(x)["sub_id"] == sub_id)
        ]
        dropped += len(lines) - len(kept)
        f.write_text("".join(kept))
    return dropped


def test_a_reforward_does_not_excuse_a_subscriber_without_receives(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    synthesise(run, SPEC)
    hosts = {e["sub_id"]: e["node"] for e in _events(run, "b-v0-0") if e["ev"] == contract.SUB_IN}
    assert set(hosts) == {f"s{k}" for k in range(SPEC.subscribers)}
    received = {
        e["sub_id"]: 0
        for f in _worker_logs(run)
        for e in map(json.loads, f.open())
        if e["ev"] == contract.RECEIVE
    }
    victim, other = sorted(received)[:2]
    _reforward(run, victim, "b-v1-0", "b-v2-0", other)
    dropped = _drop_receives(run, victim)
    assert dropped > 0
    code, err = _analyze(run, capsys)
    c = _summary(run)["correctness"]
    assert (code, c["ok"], c["missing"], c["in_transition"]) == (1, False, dropped, 0)
    assert {m["sub_id"] for m in c["first_missing"]} == {victim}
    assert "correctness INCORRECT" in err


def test_a_real_covering_active_run_cannot_hide_a_lost_delivery(tmp_path: Path) -> None:
    """Real brokers (`scotbed run` of the known-answer path): B at b-v1-0 is held back under A until
    A's unsubscription re-forwards it to b-v2-0 … b-v4-0, after p1 reached B. Without B's receive of
    p1, `scotbed analyze` finds it missing (a re-forward does not reopen B's transition) and exits 1."""
    spec = ROOT / "experiments" / "known-answer" / "path5.yaml"
    done = scotbed(
        tmp_path, "run", str(spec), "--set", "routing=covering-active", "--out", str(tmp_path), "--quiet"
    )
    assert done.returncode == 0, done.stderr
    (run,) = (d for d in tmp_path.iterdir() if d.name.startswith("known-answer-path5-"))
    c = _summary(run)["correctness"]
    assert (c["ok"], c["expected_deliveries"], c["in_transition"]) == (True, 4, 0)
    log = run / contract.events_file("script")
    lines = log.read_text().splitlines(keepends=True)
    kept = [
        x for x in lines if not (json.loads(x)["ev"] == contract.RECEIVE and json.loads(x)["sub_id"] == "B")
    ]
    assert len(lines) - len(kept) == 1
    log.write_text("".join(kept))
    done = scotbed(tmp_path, "analyze", str(run), timeout=600)
    c = _summary(run)["correctness"]
    assert (done.returncode, c["ok"], c["missing"], c["in_transition"]) == (1, False, 1, 0), done.stderr
    assert c["first_missing"] == [{"pub_id": "p1", "sub_id": "B", "copies": 0}]


def test_analyze_exits_1_when_correctness_could_not_be_checked(tmp_path: Path) -> None:
    """A real `scotbed analyze` subprocess: the run without its subscription workload is analysed (the
    metrics and the report are written) but the exit status says the check did not run, and why."""
    run = tmp_path / "run"
    synthesise(run, SPEC)
    (run / contract.SUBSCRIPTIONS).unlink()
    done = scotbed(tmp_path, "analyze", str(run), timeout=600)
    assert done.returncode == 1, done.stderr
    assert f"correctness NOT CHECKED: {contract.SUBSCRIPTIONS}" in done.stderr
    assert json.loads(done.stdout.splitlines()[0])["ok"] is None
    assert _summary(run)["correctness"]["ok"] is None


def _garble(run: Path, broker: str) -> None:
    """Bytes inserted into a line in the middle of a broker's log."""
    path = run / contract.events_file(broker)
    lines = path.read_text().splitlines(keepends=True)
    k = len(lines) // 2
    lines[k] = lines[k][:12] + "\x07#garbage~" + lines[k][12:]
    path.write_text("".join(lines))


def _cut(run: Path, broker: str) -> None:
    """The broker's log cut mid-line: its last line loses its second half and its newline."""
    path = run / contract.events_file(broker)
    text = path.read_text()
    last = text.rstrip("\n").rsplit("\n", 1)[-1]
    path.write_text(text[: len(text) - 1 - len(last) // 2])


def test_a_broker_log_with_lost_lines_fails_the_verdict_and_names_them(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], run_size: str
) -> None:
    run = tmp_path / "run"
    synthesise(run, SPEC)
    _garble(run, "b-v1-0")
    _cut(run, "b-v2-0")
    code, err = _analyze(run, capsys)
    summary = _summary(run)
    c = summary["correctness"]
    assert (code, c["ok"], c["malformed_broker_lines"], summary["events"]["malformed"]) == (1, False, 2, 2)
    assert c["missing"] == c["duplicates"] == c["false_positives"] == 0  # the oracle alone would pass it
    named = "events/b-v1-0.jsonl: 1 line(s), events/b-v2-0.jsonl: 1 line(s)"
    assert named in c["reason"] and named in err


def test_a_torn_line_of_a_broker_killed_on_purpose_is_excused(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGKILL may cut the chunk a broker was writing: one torn line per declared kill of that broker."""
    run = tmp_path / "run"
    synthesise(run, SPEC)
    _cut(run, "b-v2-0")
    kill = {"action": "kill", "target": "b-v2-0", "at_s": 1.0, "start_ns": 1, "end_ns": 2}
    (run / contract.FAULTS).write_text(json.dumps(kill) + "\n")
    code, _ = _analyze(run, capsys)
    c = _summary(run)["correctness"]
    assert (code, c["ok"], "malformed_broker_lines" in c, "reason" in c) == (0, True, False, False)
    _garble(run, "b-v2-0")  # a second malformed line: more than the one kill excuses
    code, _ = _analyze(run, capsys)
    c = _summary(run)["correctness"]
    assert (code, c["ok"], c["malformed_broker_lines"]) == (1, False, 1)
