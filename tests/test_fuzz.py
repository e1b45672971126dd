"""Fuzzing: the filter parsers, the spec loader and every broker RPC (a real broker process on loopback).

Properties: bad input gives the module's own error (FilterError, SpecError) and
nothing else; a broker answers every request with a deliberate status (never
UNKNOWN/INTERNAL), counts every refusal, logs no traceback and stays up.
Short budget in ``make test``; ``make fuzz`` runs many more examples.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from fuzzing import FUZZ, build, message_values, mutated
from google.protobuf.descriptor import MethodDescriptor
from grpc_health.v1 import health_pb2
from hypothesis import given
from hypothesis import strategies as st

from scotbed import topology
from scotbed.broker.launcher import LocalCluster
from scotbed.experiment.spec import SpecError, load_spec, parse_spec
from scotbed.filters import Filter, FilterError, Predicate
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parent.parent
TOKENS = ["price", "symbol", " ", "and", "=", "!=", "<", "<=", ">", ">=", "between", "prefix", "exists"]
TOKENS += ["[", "]", ",", '"', "'", "IBM", "1", "-2.5", "1e308", "nan", "inf", "\\", "\x00", "é"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@FUZZ
@given(st.one_of(st.text(max_size=80), st.lists(st.sampled_from(TOKENS), max_size=20).map("".join)))
def test_filter_text_parser_gives_a_filter_or_a_filter_error(text: str) -> None:
    try:
        f = Filter.parse(text)
    except FilterError:
        return
    assert Filter.parse(f.to_text()) == f


scalars = st.one_of(
    st.text(max_size=8), st.integers(-(10**6), 10**6), st.floats(allow_nan=False, allow_infinity=False)
)
KEYWORDS = {"and", "between", "prefix", "exists"}


@st.composite
def predicates(draw: st.DrawFn) -> Predicate:
    # the text form cannot name an attribute that is one of its keywords (a known limit; JSON can)
    attr = draw(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(lambda a: a not in KEYWORDS))
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "between", "prefix", "exists"]))
    if op == "exists":
        return Predicate(attr, op)
    if op == "prefix":
        return Predicate(attr, op, draw(st.text(max_size=8)))
    if op == "between":
        lo, hi = sorted(
            draw(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=2, max_size=2))
        )
        return Predicate(attr, op, (lo, hi))
    return Predicate(attr, op, draw(scalars))


@FUZZ
@given(st.lists(predicates(), max_size=5))
def test_filters_round_trip_through_text_and_json(preds: list[Predicate]) -> None:
    f = Filter(tuple(preds))
    assert Filter.parse(f.to_text()) == f
    assert Filter.from_json(f.to_json()) == f


@FUZZ
@given(json_values)
def test_json_filter_reader_gives_a_filter_or_a_filter_error(doc: Any) -> None:
    try:
        f = Filter.from_json(doc)
    except FilterError:
        return
    assert all(isinstance(p, Predicate) for p in f.predicates)


@FUZZ
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_spec_loader_gives_a_spec_or_a_spec_error_for_any_text(tmp_path: Path, text: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_spec(path)
    except SpecError as e:
        assert str(e).strip()


def _leaves(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*prefix, k)
            yield from _leaves(v, (*prefix, k))


QUICKSTART = yaml.safe_load((ROOT / "experiments" / "quickstart.yaml").read_text())
PATHS = sorted(_leaves(QUICKSTART), key=str)


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(PATHS), json_values), min_size=1, max_size=3))
def test_spec_validation_of_mutated_specs_gives_a_spec_or_a_spec_error(edits: list[tuple[Any, Any]]) -> None:
    doc = yaml.safe_load((ROOT / "experiments" / "quickstart.yaml").read_text())
    for path, value in edits:
        node = doc
        for k in path[:-1]:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node[path[-1]] = value
    try:
        spec = parse_spec(doc, base_dir=ROOT / "experiments")
    except SpecError as e:
        assert all(line.strip() for line in e.problems)
        return
    w = spec.workload
    assert all(math.isfinite(x) for x in (w.rate_per_minute, w.selectivity, w.time_scale, w.drain_s))


# --- every broker RPC -------------------------------------------------------------------------

SERVICES = [pb.DESCRIPTOR.services_by_name[s] for s in ("Broker", "Link", "Admin")]
METHODS = [m for s in SERVICES for m in s.methods]
HEALTH = list(health_pb2.DESCRIPTOR.services_by_name["Health"].methods)
#: refusals a scotbed service answers deliberately; each is counted (``rejected`` or ``refused``)
REFUSALS = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,  # Admin.Relink on a routing without dynamic links
}
ALLOWED = REFUSALS | {
    grpc.StatusCode.OK,
    grpc.StatusCode.UNIMPLEMENTED,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.ABORTED,
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, grpc.Channel]]:
    work = tmp_path_factory.mktemp("fuzz")
    scot = topology.tree(topology.path(2))
    with LocalCluster.from_topology(scot, work, routing="flooding", matching="counting") as cluster:
        with grpc.insecure_channel(cluster.address("b-v0-0")) as channel:
            yield cluster, channel
        err = work / "logs" / "b-v0-0.err"
        assert cluster.status_all()["b-v0-0"].broker_id == "b-v0-0"  # still up
    text = err.read_text()
    assert "Traceback" not in text, text[-3000:]


def _call(channel: grpc.Channel, m: MethodDescriptor, payload: bytes) -> grpc.StatusCode:
    path = f"/{m.containing_service.full_name}/{m.name}"
    try:
        if m.client_streaming:
            replies = channel.stream_stream(path)(iter([payload]), timeout=3)
            next(replies, None)
            replies.cancel()
        elif m.server_streaming:
            events = channel.unary_stream(path)(payload, timeout=3)
            next(events, None)
            events.cancel()
        else:
            channel.unary_unary(path)(payload, timeout=5)
    except grpc.RpcError as e:
        code = e.code()
        return grpc.StatusCode.OK if code == grpc.StatusCode.CANCELLED else code
    return grpc.StatusCode.OK


def _counted(channel: grpc.Channel) -> int:
    c = pbg.AdminStub(channel).Status(pb.StatusRequest(), timeout=10).counters
    return int(c["rejected"] + c["refused"])


@st.composite
def payloads(draw: st.DrawFn, methods: list[MethodDescriptor]) -> tuple[MethodDescriptor, bytes]:
    m = draw(st.sampled_from(methods))
    valid = build(m.input_type, draw(message_values(m.input_type))).SerializeToString()
    kind = draw(st.sampled_from(["valid", "mutated", "random"]))
    if kind == "random":
        return m, draw(st.binary(max_size=64))
    return m, valid if kind == "valid" else draw(mutated(valid))


@FUZZ
@given(payloads(METHODS))
def test_every_broker_rpc_answers_random_and_mutated_messages_deliberately(
    broker: tuple[LocalCluster, grpc.Channel], case: tuple[MethodDescriptor, bytes]
) -> None:
    _, channel = broker
    m, payload = case
    before = _counted(channel)
    code = _call(channel, m, payload)
    assert code in ALLOWED, (m.full_name, code, payload)
    counted = _counted(channel) - before
    if m.containing_service.name == "Link":  # malformed envelopes inside an accepted batch count too
        assert counted >= (code in REFUSALS), (m.full_name, code)
    else:
        assert counted == (code in REFUSALS), (m.full_name, code, payload)


@FUZZ
@given(payloads(HEALTH))
def test_health_service_answers_random_messages_without_a_traceback(
    broker: tuple[LocalCluster, grpc.Channel], case: tuple[MethodDescriptor, bytes]
) -> None:
    m, payload = case
    assert _call(broker[1], m, payload) in {*ALLOWED, grpc.StatusCode.NOT_FOUND}
