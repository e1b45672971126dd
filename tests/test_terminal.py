"""What a user sees on the terminal: real `scotbed` processes, every line of their output read.

`--log-json` writes nothing but JSON lines on either stream (the JVM's and Spark's own output goes to
the run's `analysis/spark.log`), the phases come in the lifecycle's order with truthful details, the
publish phase shows live figures (a plain line every few seconds off a terminal, `progress` events
under `--log-json`), a host-bound run is a warning and with `--require-valid` exit 5, and the people's
output is never wrapped or read as markup.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scotbed import contract
from scotbed.analysis.synth import SynthSpec, synthesise
from scotbed.analysis.validity import EXIT_HOST_BOUND, HOST_BOUND, UNKNOWN, VALID, exit_status
from scotbed.orchestrator.progress import PLAIN_EVERY_S

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = str(ROOT / "experiments" / "quickstart.yaml")
# the quickstart on a 3-broker tree: 2 publishers of 40 notifications, 6 subscribers; the publish
# phase lasts 4 s, long enough for live figures
TINY = [
    "workload.subscribers=6",
    "workload.publishers=2",
    "workload.notifications_per_publisher=40",
    "workload.rate_per_minute=600",
    "workload.symbols=20",
    "workload.selectivity=0.1",
    "topology.kind=tree",
    "topology.acyclic={kind: kary, fanout: 2, depth: 1}",
    "topology.connectivity=1",
    "routing=rpf",
    "timeouts.ready_s=90",
    "timeouts.quiescent_s=60",
]
#: the lifecycle's phases of a run on this host, in the order the README gives them
PHASES = [
    "validate",
    "topology",
    "render",
    "deploy",
    "ready",
    "subscribe",
    "quiescent",
    "publish",
    "drain",
    "collect",
    "teardown",
    "analyse",
]


def scotbed(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scotbed.orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of ``text`` as a JSON object; a line that is not one fails with the line."""
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"not a JSON line: {line!r}")
    return out


@pytest.mark.slow
@pytest.mark.spark
def test_run_log_json_writes_only_json_lines_in_the_lifecycle_s_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    sets = [a for s in TINY for a in ("--set", s)]
    out = scotbed("run", QUICKSTART, *sets, "--out", str(tmp_path / "runs"), "--log-json", timeout=600)
    stdout, stderr = json_lines(out.stdout), json_lines(out.stderr)
    assert out.returncode in (0, 1, 4), out.stderr[-3000:]  # whatever the verdict: JSON only
    [result] = stdout
    assert result["event"] == "result" and result["exit_code"] == out.returncode
    run_dir = Path(result["report"]).parent
    assert Path(result["report"]).is_file() and (run_dir / contract.SPARK_LOG).is_file()
    done = {e["phase"]: e["detail"] for e in stderr if e["event"] == "phase_done"}
    assert [e["phase"] for e in stderr if e["event"] == "phase_start"] == PHASES
    assert list(done) == PHASES
    assert done["publish"] == "2/2 publishers and 6/6 subscribers done"
    assert done["deploy"] == "3 brokers started (local)"
    assert done["teardown"] == "3 brokers and the workload stopped"
    # the live figures: progress events inside the publish phase only, with the brokers' counts
    names = [(e["event"], e.get("phase")) for e in stderr]
    live = [k for k, name in enumerate(names) if name[0] == "progress"]
    assert live, "no progress event during publish"
    assert names.index(("phase_start", "publish")) < live[0] and live[-1] < names.index(
        ("phase_done", "publish")
    )
    for k in live:
        e = stderr[k]
        assert e["phase"] == "publish" and e["expected"] == 80 and 0 <= e["published"] <= 80
        assert e["answered"] == e["brokers"] == 3 and e["publishers"] == 2
        assert isinstance(e["largest_queue"], int) and e["worst_lag_ms"] >= 0.0
    verdict = json.loads((run_dir / contract.SUMMARY).read_text())["validity"]["verdict"]
    # this host's load decides which (a loaded host may even leave no loop event in the window);
    # a host-bound one is a warning
    heads = {
        VALID: ("info", "valid: "),
        HOST_BOUND: ("warning", "HOST-BOUND: "),
        UNKNOWN: ("info", "unknown: "),
    }
    head = heads[verdict]
    said = [(e["event"], e["text"].split(": ")[0] + ": ") for e in stderr if "text" in e]
    assert said.count(head) == 1


@pytest.mark.slow
def test_off_a_terminal_the_publish_phase_prints_its_live_figures_every_few_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real run without the analysis, its output captured (not a terminal): plain live lines between
    the publish phase's start and its closing line, none after it."""
    from scotbed.orchestrator.progress import RichProgress
    from scotbed.orchestrator.run import RunOptions, run_spec

    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    run_spec(QUICKSTART, TINY, RunOptions(out=tmp_path / "runs", analyse=False), RichProgress())
    err = capsys.readouterr().err.splitlines()
    quiescent = next(k for k, x in enumerate(err) if x.startswith("✓ quiescent ("))
    published = next(k for k, x in enumerate(err) if x.startswith("✓ publish ("))
    live = [k for k, x in enumerate(err) if x.startswith("… ")]
    assert live and quiescent < live[0] and live[-1] < published, err
    line = re.compile(
        r"… publish \((\d+\.\d)s\) published (\d+)/80, delivered \d+, largest queue \d+( \(\S+\))?, "
        r"worst loop lag \d+\.\d ms( \(b-\S+\))?, publishers done [0-2]/2$"
    )
    matches = [line.match(err[k]) for k in live]
    assert all(matches), [err[k] for k in live]
    seconds = [float(m[1]) for m in matches if m is not None]
    assert all(b - a >= PLAIN_EVERY_S - 0.1 for a, b in itertools.pairwise(seconds))


@pytest.mark.slow
def test_a_failed_run_s_teardown_is_a_phase_with_its_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    sets = [a for s in [*TINY, "timeouts.quiescent_s=0.1"] for a in ("--set", s)]  # subscribe cannot make it
    out = scotbed("run", QUICKSTART, *sets, "--out", str(tmp_path / "runs"), timeout=300)
    assert out.returncode == 3, out.stderr[-3000:]
    err = out.stderr.splitlines()
    marks = [x.split(" (")[0] for x in err if x[:2] in ("✓ ", "✗ ")]
    assert marks == [f"✓ {p}" for p in PHASES[:5]] + ["✗ subscribe", "✓ teardown"]
    [teardown] = [x for x in err if x.startswith("✓ teardown (")]
    assert teardown.endswith(") 3 brokers and the workload stopped")
    assert "teardown" not in err  # no bare announcement besides the phase
    assert err[-2].startswith("scotbed run: failed: subscribe: ") and err[-2].endswith("within 0.1 s")


def _host_bound_run(tmp_path: Path) -> Path:
    """The host-bound synthesised run of the validity tests: 30 ms mean loop lag on every broker and
    client process."""
    run = tmp_path / "synth-20260101T000000-00000001"
    spec = SynthSpec(brokers=5, publications=200, loop_lag_ms=30.0, loop_cpu=0.1, cores=2)
    synthesise(run, dataclasses.replace(spec, client_lag_ms=30.0))
    return run


JVM_NOISE = ("WARNING:", "log4j", "NativeCodeLoader", "WARN ", "Picked up")


@pytest.mark.slow
@pytest.mark.spark
def test_a_host_bound_run_is_a_warning_and_with_require_valid_exits_5(tmp_path: Path) -> None:
    run = _host_bound_run(tmp_path)
    # --out: the analysis goes elsewhere and the run directory is only read; --quiet: the path alone
    out = tmp_path / "elsewhere"
    quiet = scotbed("analyze", str(run), "--out", str(out), "--quiet", timeout=300)
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert quiet.stdout == f"{out.resolve() / contract.REPORT}\n"
    assert "scotbed analyze: warning: HOST-BOUND: " in quiet.stderr
    assert not any(noise in quiet.stdout + quiet.stderr for noise in JVM_NOISE), quiet.stderr[-3000:]
    assert (out / contract.SUMMARY).is_file() and (out / contract.SPARK_LOG).is_file()
    assert not (run / contract.SUMMARY).exists() and not (run / contract.REPORT).exists()

    plain = scotbed("analyze", str(run), timeout=300)
    assert plain.returncode == 0, plain.stderr[-3000:]
    # stderr holds the verdict as a warning and nothing from the JVM or Spark: that is in the run's log
    [warning] = [x for x in plain.stderr.splitlines() if x.startswith("scotbed analyze: warning: ")]
    assert warning.startswith("scotbed analyze: warning: HOST-BOUND: ") and warning.endswith("; see report")
    assert not any(noise in plain.stdout + plain.stderr for noise in JVM_NOISE), plain.stderr[-3000:]
    assert (run / contract.SPARK_LOG).is_file()
    assert plain.stdout.splitlines()[-1] == f"report: {run / contract.REPORT}"

    gated = scotbed("analyze", str(run), "--require-valid", "--log-json", timeout=300)
    assert gated.returncode == EXIT_HOST_BOUND == 5, gated.stderr[-3000:]
    [result] = json_lines(gated.stdout)
    assert json_lines(gated.stderr) == []
    assert result["exit_code"] == 5 and result["validity"]["verdict"] == HOST_BOUND
    assert result["correctness"]["ok"] is True and result["report"] == str(run / contract.REPORT)


def test_the_exit_status_gates_only_a_correct_host_bound_run_and_only_on_request() -> None:
    bound, valid, unknown = {"verdict": HOST_BOUND}, {"verdict": VALID}, {"verdict": "unknown"}
    assert exit_status(0, bound, require_valid=True) == EXIT_HOST_BOUND
    assert exit_status(0, bound, require_valid=False) == 0
    assert [exit_status(0, v, True) for v in (valid, unknown, None)] == [0, 0, 0]
    # a failed check (1) or an undrained run (4) says more than the host did
    assert exit_status(1, bound, True) == 1 and exit_status(4, bound, True) == 4


def test_run_require_valid_reaches_the_run_options() -> None:
    from scotbed.orchestrator.cli import build_parser
    from scotbed.orchestrator.run import options_from_args

    for command in ("run", "campaign"):
        args = build_parser().parse_args([command, "x.yaml", "--require-valid", "--verbose"])
        options = options_from_args(args)
        assert options.require_valid and options.verbose and not options.quiet


def test_people_s_output_is_neither_wrapped_nor_read_as_markup(capsys: pytest.CaptureFixture[str]) -> None:
    from scotbed.orchestrator.progress import RichProgress

    progress = RichProgress()
    long = "valid: " + "host load adds at most 11.0 ms to a delivery; " * 6 + "[mean lag 0.43 ms x 4 waits]"
    progress.info(long)
    progress.warn("HOST-BOUND: [bold]not bold[/]")
    with progress.phase("publish") as ph:
        ph.update("[2/2] publishers done")
    err = capsys.readouterr().err.splitlines()
    assert err[0] == long
    assert err[1] == "warning: HOST-BOUND: [bold]not bold[/]"
    assert err[2].startswith("✓ publish (") and err[2].endswith(") [2/2] publishers done")
    assert len(err) == 3


def test_log_json_turns_python_s_warnings_and_log_records_into_json_lines() -> None:
    script = (
        "import logging, warnings\n"
        "from scotbed.orchestrator.progress import make_progress\n"
        "p = make_progress(log_json=True)\n"
        "warnings.warn('pandas says so', FutureWarning)\n"
        "logging.getLogger('py4j').error('the gateway went away')\n"
        "p.error('scotbed run: failed: x')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout == ""
    lines = json_lines(out.stderr)
    assert [(e["event"], e.get("logger")) for e in lines] == [
        ("warning", "py.warnings"),
        ("error", "py4j"),
        ("error", None),
    ]
    assert "pandas says so" in lines[0]["text"] and lines[1]["text"] == "the gateway went away"
