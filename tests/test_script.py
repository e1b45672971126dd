"""Scripted scenarios (docs/design.md §8): parsing, bad lines named by number, the spec hook."""

from __future__ import annotations

import codecs
import json
import os
import subprocess
from pathlib import Path

import pytest
from scotbed_cli import scotbed

from scotbed.config import LimitsConfig
from scotbed.experiment.spec import SpecError, build_scot, load_spec
from scotbed.loader import MAX_DOCUMENT_BYTES
from scotbed.orchestrator import cli
from scotbed.orchestrator.scripted import load_script
from scotbed.workloads.script import ScriptError, parse

ROOT = Path(__file__).resolve().parent.parent
BROKERS = ["b-v0-0", "b-v1-0", "b-v2-0"]
SUB = {"op": "subscribe", "sub_id": "S", "broker": "b-v0-0", "filter": [{"attr": "x", "op": "<", "value": 5}]}


def lines(*docs: object) -> str:
    return "\n".join(d if isinstance(d, str) else json.dumps(d) for d in docs) + "\n"


def test_a_script_parses_in_file_order_with_implicit_settles() -> None:
    text = lines(
        "# a comment line, then a blank one",
        "",
        SUB,
        {
            "op": "publish",
            "pub_id": "p1",
            "broker": "b-v2-0",
            "attrs": {"x": 3, "sym": "IBM"},
            "settle": False,
        },
        '{"op": "settle"}   # an annotated line',
        {"op": "sleep", "ms": 20},
        {"op": "unsubscribe", "sub_id": "S"},
    )
    script = parse(text, BROKERS, "t.jsonl")
    assert [(o.line, o.op) for o in script.ops] == [
        (3, "subscribe"), (4, "publish"), (5, "settle"), (6, "sleep"), (7, "unsubscribe"),
    ]  # fmt: skip
    assert [o.settles for o in script.ops] == [True, False, True, False, True]
    sub, pub, _, sleep, unsub = script.ops
    assert sub.filter is not None and sub.filter.matches({"x": 4}) and not sub.filter.matches({"x": 5})
    assert pub.attrs == {"x": 3, "sym": "IBM"} and pub.broker == "b-v2-0"
    assert sleep.ms == 20.0
    assert unsub.broker == "b-v0-0"  # the unsubscription goes where its subscription lives


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"op": "subscribe", "sub_id": "S"', "not valid JSON"),
        ("[1, 2]", "a line is one JSON object, got list"),
        ('{"op": "settle"} trailing', "unexpected text after the JSON object"),
        ({"op": "teleport"}, "unknown op 'teleport'; allowed: subscribe, unsubscribe, publish, settle"),
        ({**SUB, "broker": "b-v7-0"}, "unknown broker 'b-v7-0'; brokers are b-v0-0, b-v1-0, b-v2-0"),
        ({**SUB, "filter": [{"attr": "x", "op": "~", "value": 1}]}, "bad filter: filter[0]: predicate"),
        ({**SUB, "filter": [{"attr": "x", "op": "between", "value": [9, 1]}]}, "bad filter"),
        ({**SUB, "filter": "x < 5"}, "bad filter: filter: a filter is a list of predicates"),
        ({k: v for k, v in SUB.items() if k != "filter"}, "subscribe needs 'filter'"),
        ({"op": "unsubscribe", "sub_id": "T"}, "unknown sub_id 'T': no earlier line subscribes it"),
        ({"op": "publish", "pub_id": "p", "broker": "b-v0-0", "attrs": {"x": True}}, "attrs.x: True is not"),
        ({"op": "publish", "pub_id": "p", "broker": "b-v0-0"}, "publish needs 'attrs'"),
        ({"op": "sleep", "ms": -1}, "sleep needs 'ms', a number of milliseconds >= 0"),
        ({"op": "settle", "ms": 3}, "unknown key(s) ms for op 'settle'"),
        ({**SUB, "settle": "no"}, "'settle' must be true or false"),
        ({**SUB, "sub_id": ""}, "'sub_id' must be a non-empty string"),
    ],
)  # fmt: skip
def test_a_bad_line_is_named_by_file_and_line_number(bad: object, message: str) -> None:
    text = lines("# header", {**SUB, "sub_id": "first"}, bad)
    with pytest.raises(ScriptError) as e:
        parse(text, BROKERS, "scen.jsonl")
    assert str(e.value).startswith("scen.jsonl:3: "), e.value
    assert message in str(e.value)


def test_ids_are_used_once_and_unsubscribed_once() -> None:
    again = lines(SUB, {"op": "unsubscribe", "sub_id": "S"}, SUB)
    with pytest.raises(ScriptError, match=r"^s:3: sub_id 'S' is already used on line 1"):
        parse(again, BROKERS, "s")
    twice = lines(SUB, {"op": "unsubscribe", "sub_id": "S"}, {"op": "unsubscribe", "sub_id": "S"})
    with pytest.raises(ScriptError, match=r"^s:3: unknown sub_id 'S': it was already unsubscribed"):
        parse(twice, BROKERS, "s")
    pub = {"op": "publish", "pub_id": "p", "broker": "b-v0-0", "attrs": {}}
    with pytest.raises(ScriptError, match=r"^s:2: pub_id 'p' is already published on line 1"):
        parse(lines(pub, pub), BROKERS, "s")
    with pytest.raises(ScriptError, match="no operations"):
        parse("# nothing\n\n", BROKERS, "s")


def _spec(tmp_path: Path, script: str, extra: str = "") -> Path:
    (tmp_path / "scen.jsonl").write_text(script)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: scripted\ntopology: {kind: tree, acyclic: {kind: path, n: 3}}\nrouting: rpf\n"
        f"workload: {{script: scen.jsonl{extra}}}\n"
    )
    return spec


def test_the_spec_reads_the_script_relative_to_itself(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, lines(SUB)))
    script = load_script(spec, build_scot(spec))
    assert [o.sub_id for o in script.ops] == ["S"]


def test_validate_fails_with_exit_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, lines(SUB, {"op": "unsubscribe", "sub_id": "nope"}))
    assert cli.main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "scotbed validate: error: workload.script: scen.jsonl:2: unknown sub_id 'nope': "
        "no earlier line subscribes it"
    )
    assert cli.main(["validate", str(_spec(tmp_path, lines(SUB)))]) == 0
    assert "script scen.jsonl: 1 operations, 1 subscribe" in capsys.readouterr().out


def test_generated_workload_keys_next_to_a_script_are_spec_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as e:
        load_spec(_spec(tmp_path, lines(SUB), extra=", subscribers: 4, schema: stock"))
    assert e.value.problems == [
        "workload.schema: not used with workload.script (the script is the workload)",
        "workload.subscribers: not used with workload.script (the script is the workload)",
    ]
    with pytest.raises(SpecError, match=r"^workload.script: .*missing.jsonl: no such script file$"):
        spec = load_spec(_spec(tmp_path, "").with_name("spec.yaml"), ["workload.script=missing.jsonl"])
        load_script(spec, build_scot(spec))
    (tmp_path / "latin1.jsonl").write_bytes(b'{"op": "sleep", "ms": 1}\n{"op": "sleep", "ms": 1} # \xe9\n')
    with pytest.raises(SpecError, match=r"^workload.script: .*latin1.jsonl:2: not UTF-8 text \(byte 0xe9"):
        spec = load_spec(spec.base_dir / "spec.yaml", ["workload.script=latin1.jsonl"])
        load_script(spec, build_scot(spec))


def test_the_known_answer_specs_validate() -> None:
    for spec_path in sorted((ROOT / "experiments" / "known-answer").glob("*.yaml")):
        spec = load_spec(spec_path)
        assert load_script(spec, build_scot(spec)).ops, spec_path


def test_a_standalone_compose_file_refuses_a_script(tmp_path: Path) -> None:
    from scotbed.orchestrator.render.compose_standalone import standalone_plan

    spec = load_spec(_spec(tmp_path, lines(SUB)))
    with pytest.raises(SpecError, match=r"workload\.script: a scripted workload is played from the host"):
        standalone_plan(spec, build_scot(spec), "r1")


# --- scripts `validate` and `run` must refuse before anything deploys (issue 39) ---------------

PROBE_SPEC = (
    "name: probe\ntopology: {kind: tree, acyclic: {kind: path, n: 2}}\nrouting: rpf\n"
    "workload: {script: %s}\ntimeouts: {ready_s: 30, quiescent_s: 10, drain_s: 10, run_s: 60}\n"
)
HUGE = 10**400  # beyond float's range, and beyond the wire's 64-bit integers
LIMITS = LimitsConfig()
SUB0 = {"op": "subscribe", "sub_id": "S", "broker": "b-v0-0", "filter": []}


def _refused(proc: subprocess.CompletedProcess[str], *parts: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    for part in parts:
        assert part in proc.stderr, proc.stderr


def _validate_and_run_refuse(tmp_path: Path, script: str, *parts: str) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(PROBE_SPEC % json.dumps(script))
    _refused(scotbed(tmp_path, "validate", str(spec), timeout=120), *parts)
    out = tmp_path / "runs"
    _refused(scotbed(tmp_path, "run", str(spec), "--out", str(out), "--quiet", timeout=120), *parts)
    assert not [p for p in out.rglob("*") if p.is_file() and p.parent.name == "events"]  # no broker ran


def _pub(attrs: dict[str, object]) -> str:
    return json.dumps({"op": "publish", "pub_id": "p", "broker": "b-v0-0", "attrs": attrs})


def _sub(**changes: object) -> str:
    return json.dumps({**SUB0, **changes})


MAX_ID, MAX_PREDICATES = LIMITS.max_id_bytes, LIMITS.max_filter_predicates
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (f'{{"op": "sleep", "ms": {HUGE}}}', "sleep needs 'ms', a number of milliseconds >= 0, got an"),
        (_pub({"x": HUGE}), "attrs.x: an integer of 1329 bits is outside the 64-bit integers"),
        (
            _sub(filter=[{"attr": "x", "op": "<", "value": HUGE}]),
            "bad filter: filter[0]: predicate on 'x': an integer of 1329 bits is outside the 64-bit integers",
        ),
        (_sub(filter=[{"attr": "x", "op": "=", "value": 2**63}]), "9223372036854775808 is outside the 64"),
        (f'{{"op": "subscribe", "sub_id": "S", "broker": "b-v0-0", "filter": {DEEP}}}', "nested too deeply"),
        (_sub(sub_id="S\udc80"), "'sub_id': 'S\\udc80' is not UTF-8 text (a lone surrogate at index 1)"),
        (_pub({"x\udc80": 1}), "attrs: an attribute name: 'x\\udc80' is not UTF-8 text"),
        (
            _sub(sub_id="S" * (MAX_ID + 1)),
            f"the brokers would refuse this subscription: sub_id of {MAX_ID + 1} bytes: "
            f"{MAX_ID + 1} exceeds limits.max_id_bytes = {MAX_ID}",
        ),
        (
            _sub(filter=[{"attr": "x", "op": "exists"}] * (MAX_PREDICATES + 1)),
            f"predicates: {MAX_PREDICATES + 1} exceeds limits.max_filter_predicates = {MAX_PREDICATES}",
        ),
        (
            _pub({"x": "y" * LIMITS.max_notification_bytes}),
            "the brokers would refuse this publication: notifications[0]: bytes: ",
        ),
    ],
    ids=["sleep-huge-int", "attr-huge-int", "filter-huge-int", "filter-2**63", "deep-filter",
         "surrogate-id", "surrogate-attr", "long-id", "many-predicates", "big-notification"],
)  # fmt: skip
def test_a_line_the_brokers_could_not_take_fails_validate_and_run_with_exit_2(
    tmp_path: Path, line: str, message: str
) -> None:
    (tmp_path / "s.jsonl").write_text(line + "\n")
    _validate_and_run_refuse(tmp_path, "s.jsonl", "workload.script: s.jsonl:1: ", message)


def test_a_script_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)  # opening it would block until a writer came
    _validate_and_run_refuse(tmp_path, str(fifo), f"{fifo}: not a regular file (a device, FIFO or socket)")
    spec = tmp_path / "spec.yaml"
    spec.write_text(PROBE_SPEC % json.dumps("/dev/zero"))  # reading it would never end
    _refused(scotbed(tmp_path, "validate", str(spec), timeout=120), "/dev/zero: not a regular file")


def test_a_script_over_the_size_limit_is_refused_naming_the_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    with big.open("wb") as f:
        f.truncate(MAX_DOCUMENT_BYTES + 1)  # sparse: nothing is written
    spec = tmp_path / "spec.yaml"
    spec.write_text(PROBE_SPEC % json.dumps("big.jsonl"))
    _refused(
        scotbed(tmp_path, "validate", str(spec), timeout=120),
        f"{big}: more than {MAX_DOCUMENT_BYTES} bytes; a script file may hold at most that",
    )


def test_a_script_with_a_utf8_byte_order_mark_is_read(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_bytes(codecs.BOM_UTF8 + lines(SUB).encode())
    spec = tmp_path / "spec.yaml"
    spec.write_text(PROBE_SPEC % json.dumps("s.jsonl"))
    proc = scotbed(tmp_path, "validate", str(spec), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "script s.jsonl: 1 operations, 1 subscribe" in proc.stdout
    (tmp_path / "s.jsonl").write_bytes(codecs.BOM_UTF8 + b'{"op": "sleep", "ms": 1}\n\xff\n')
    _refused(
        scotbed(tmp_path, "validate", str(spec), timeout=120),
        "s.jsonl:2: not UTF-8 text (byte 0xff at offset 28)",
    )
