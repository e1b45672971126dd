"""The `scotbed` command line, mostly through a real subprocess: exit codes, stdout, stderr, files."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from scotbed.orchestrator import cli
from scotbed.orchestrator.commands import CommandError, call_lazy

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = str(ROOT / "experiments" / "quickstart.yaml")
FIG8 = str(ROOT / "experiments" / "paper-fig8.yaml")


def scotbed(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "scotbed"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "scotbed.orchestrator.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.slow  # starts a Python process
def test_validate_ok_and_resolved() -> None:
    out = scotbed("validate", QUICKSTART)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        "ok: quickstart: scot paper-fig2 × K3 (18 brokers), routing snr, matching counting, "
        "30 subscribers, 3 publishers, backend local\n"
    )
    resolved = scotbed("validate", QUICKSTART, "--resolved", "--set", "workload.subscribers=7")
    assert yaml.safe_load(resolved.stdout)["workload"]["subscribers"] == 7


@pytest.mark.slow  # starts a Python process
def test_validate_wrong_spec_exits_2_naming_the_key(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(
        "name: bad\ntopology: {kind: tree}\nrouting: snr\nworkload: {rate_per_minute: -5, colour: red}\n"
    )
    out = scotbed("validate", str(spec))
    assert out.returncode == 2
    head, rate, colour = out.stderr.splitlines()
    assert head == "scotbed validate: error: 2 problems in the spec:"
    assert rate == "  - workload.rate_per_minute: -5 is not allowed: input should be greater than 0"
    assert colour.startswith(
        "  - workload.colour: unknown key; allowed here: schema, gryphon, symbols, zipf_s, csv,"
    )
    assert out.stdout == ""


@pytest.mark.parametrize(
    ("spec", "counts"),
    [(QUICKSTART, (18, 3, 6, 15, 18)), (FIG8, (75, 5, 15, 70, 150))],
)
@pytest.mark.slow  # starts a Python process
def test_topology_json_counts(spec: str, counts: tuple[int, ...]) -> None:
    out = scotbed("topology", spec, "--json")
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    assert (s["brokers"], s["clusters"], s["regions"], s["acols"], s["icols"]) == counts


@pytest.mark.slow  # starts a Python process
def test_topology_set_and_draw(tmp_path: Path) -> None:
    png = tmp_path / "t.png"
    out = scotbed(
        "topology",
        QUICKSTART,
        "--set",
        "topology={kind: tree, acyclic: paper-fig2}",
        "--set",
        "routing=rpf",
        "--draw",
        str(png),
    )
    assert out.returncode == 0, out.stderr
    table = dict(line.split(None, 1) for line in out.stdout.splitlines())
    assert (table["kind"], table["brokers"], table["acols"], table["icols"]) == ("tree", "6", "5", "0")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # starts a Python process
def test_render_k8s_with_node_warning(tmp_path: Path) -> None:
    out = scotbed(
        "render", FIG8, "--target", "k8s", "--out", str(tmp_path), "--nodes", "3", "--image", "r/b:2"
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == (
        "warning: 3 node(s) < 5 needed by the required anti-affinity: some broker pods will stay Pending; "
        "use --preferred-anti-affinity or add nodes\n"
    )
    docs = list(yaml.safe_load_all((tmp_path / "k8s.yaml").read_text()))
    assert sum(d["kind"] == "Pod" for d in docs) == 75
    assert {d["spec"]["containers"][0]["image"] for d in docs if d["kind"] == "Pod"} == {"r/b:2"}
    assert json.loads((tmp_path / "topology.json").read_text())["brokers"][0]["id"] == "b-i0-0"


@pytest.mark.slow  # starts a Python process
def test_render_compose(tmp_path: Path) -> None:
    out = scotbed("render", QUICKSTART, "--target", "compose", "--out", str(tmp_path), "--run-id", "q-1")
    assert out.returncode == 0, out.stderr
    doc = yaml.safe_load((tmp_path / "docker-compose.yml").read_text())
    assert len(doc["services"]) == 18
    assert doc["services"]["b-a-0"]["labels"]["scotbed.io/run-id"] == "q-1"
    assert (tmp_path / "brokers.json").exists() and (tmp_path / "events").is_dir()


@pytest.mark.slow  # starts a Python process
def test_usage_errors(tmp_path: Path) -> None:
    missing = scotbed("validate", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2
    assert missing.stderr == f"scotbed validate: error: {tmp_path / 'nope.yaml'}: no such spec file\n"
    assert scotbed("render", QUICKSTART).returncode == 2  # argparse: --target and --out are required
    assert scotbed().returncode == 2


def test_lazy_command_without_implementation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = argparse.Namespace()
    with pytest.raises(CommandError, match=r"'scotbed down' is not implemented yet in this build"):
        call_lazy("down", "scotbed.orchestrator.no_such_module", args)
    # a missing dependency *inside* an implementation is a real error, not a missing command
    (tmp_path / "scotbed_fake_broken.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_xyz"):
        call_lazy("down", "scotbed_fake_broken", args)


def test_lazy_command_calls_main(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[argparse.Namespace] = []

    def main(args: argparse.Namespace) -> int:
        calls.append(args)
        return 3

    fake = types.ModuleType("scotbed_fake_impl")
    fake.main = main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "scotbed_fake_impl", fake)
    args = argparse.Namespace(x=1)
    assert call_lazy("fake", "scotbed_fake_impl", args) == 3
    assert calls == [args]


def test_user_errors_exit_2_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["validate", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err
    assert err == f"scotbed validate: error: {tmp_path / 'nope.yaml'}: no such spec file\n"
    assert set(cli.COMMANDS) >= {"validate", "topology", "render", "run", "analyze", "campaign", "down"}


def test_analyze_passes_its_arguments_through() -> None:
    assert cli._passthrough("analyze") is not None  # the analysis owns its options
    assert cli._passthrough("validate") is None and cli._passthrough("nope") is None


@pytest.mark.slow  # starts a Python process
def test_version_is_the_package_s() -> None:
    from importlib.metadata import version

    out = scotbed("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"scotbed {version('scotbed')}\n"


@pytest.mark.slow  # starts Python processes
def test_help_shows_defaults_plain_text_and_only_options_that_do_something() -> None:
    analyze = scotbed("analyze", "--help").stdout
    assert "``" not in analyze and ":func:" not in analyze
    for option in ("--quiet", "--verbose", "--log-json", "--require-valid", "--spark-master"):
        assert option in analyze
    run = scotbed("run", "--help").stdout
    assert "--workers N           Locust worker processes (default: 2)" in run
    assert "parent of the run directory (default: runs)" in run
    assert "[--quiet | --verbose | --log-json]" in run
    # saturate analyses nothing: no Spark, no validity to require, no Spark output to show
    saturate = scotbed("saturate", "--help").stdout
    assert "--lo LO               lower bound of the search (default: 60.0)" in saturate
    for option in ("--spark-master", "--require-valid", "--verbose"):
        assert option not in saturate
    assert "--quiet" in saturate and "--log-json" in saturate


@pytest.mark.slow  # starts Python processes
def test_output_modes_exclude_each_other_and_log_json_errors_are_json(tmp_path: Path) -> None:
    both = scotbed("run", QUICKSTART, "--quiet", "--log-json")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    missing = scotbed("run", str(tmp_path / "nope.yaml"), "--log-json")
    assert missing.returncode == 2 and missing.stdout == ""
    lines = [json.loads(line) for line in missing.stderr.splitlines()]
    assert [e["event"] for e in lines] == ["phase_start", "phase_failed", "error"]
    assert lines[-1]["text"] == f"scotbed run: error: {tmp_path / 'nope.yaml'}: no such spec file"
