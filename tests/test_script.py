"""Scripted scenarios (DESIGN §8): parsing, every kind of bad line named by its number, the spec hook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scotbed.orchestrator import cli
from scotbed.orchestrator.scripted import load_script
from scotbed.orchestrator.spec import SpecError, build_scot, load_spec
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
