"""Hypothesis strategies for the fuzz tests: protobuf messages from their descriptors, byte mutations.

Budget: ``SCOTBED_FUZZ_EXAMPLES`` examples per test (default 60, so ``make test``
stays short); ``make fuzz`` raises it.
"""

from __future__ import annotations

import os
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message_factory import GetMessageClass
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("SCOTBED_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=EXAMPLES <= 60,  # the short budget in `make test` is reproducible
    database=None,
)

_D = FieldDescriptor
_INTS = {
    _D.TYPE_INT32: (-(2**31), 2**31 - 1),
    _D.TYPE_SINT32: (-(2**31), 2**31 - 1),
    _D.TYPE_UINT32: (0, 2**32 - 1),
    _D.TYPE_INT64: (-(2**63), 2**63 - 1),
    _D.TYPE_SINT64: (-(2**63), 2**63 - 1),
    _D.TYPE_UINT64: (0, 2**64 - 1),
}
#: words a scotbed message's strings often hold, so random messages reach past the first checks
_WORDS = ["", "b-v0-0", "b-v1-0", "hello", "price", "=", "<", "between", "exists", "prefix", "~", "x" * 300]


def _scalar(f: FieldDescriptor) -> st.SearchStrategy[Any]:
    if f.type in _INTS:
        lo, hi = _INTS[f.type]
        return st.one_of(st.integers(lo, hi), st.sampled_from([0, 1, lo, hi]))
    if f.type in (_D.TYPE_DOUBLE, _D.TYPE_FLOAT):
        return st.floats(allow_nan=True, allow_infinity=True, width=64 if f.type == _D.TYPE_DOUBLE else 32)
    if f.type == _D.TYPE_BOOL:
        return st.booleans()
    if f.type == _D.TYPE_ENUM:
        return st.one_of(st.sampled_from([v.number for v in f.enum_type.values]), st.integers(-5, 50))
    if f.type == _D.TYPE_BYTES:
        return st.binary(max_size=40)
    return st.one_of(st.sampled_from(_WORDS), st.text(max_size=20))


def message_values(desc: Descriptor, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Field values for a message of type ``desc`` (recursion bounded by depth)."""
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for f in desc.fields:
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            key, val = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            vals = message_values(val.message_type, depth + 1) if val.message_type else _scalar(val)
            parts[f.name] = st.dictionaries(_scalar(key), vals, max_size=4)
            continue
        if f.message_type is not None:
            if depth >= 3:
                continue
            one: st.SearchStrategy[Any] = message_values(f.message_type, depth + 1)
        else:
            one = _scalar(f)
        parts[f.name] = st.lists(one, max_size=4) if f.is_repeated else one
    if not parts:
        return st.just({})
    return st.fixed_dictionaries({}, optional=parts)


def build(desc: Descriptor, values: dict[str, Any]) -> Any:
    """A message of type ``desc`` from :func:`message_values` output (oneof: the last set wins)."""
    msg = GetMessageClass(desc)()
    for name, value in values.items():
        f = desc.fields_by_name[name]
        target = getattr(msg, name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vdesc = f.message_type.fields_by_name["value"].message_type
            for k, v in value.items():
                if vdesc is None:
                    target[k] = v
                else:
                    target[k].CopyFrom(build(vdesc, v))
        elif f.is_repeated:
            for v in value:
                if f.message_type is not None:
                    target.add().CopyFrom(build(f.message_type, v))
                else:
                    target.append(v)
        elif f.message_type is not None:
            target.CopyFrom(build(f.message_type, value))
        else:
            setattr(msg, name, value)
    return msg


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few random byte flips, cuts, insertions or duplications."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "dup"]))
        at = draw(st.integers(0, len(buf)))
        if kind == "flip" and buf:
            at = min(at, len(buf) - 1)
            buf[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "cut":
            del buf[at : at + draw(st.integers(1, 8))]
        elif kind == "insert":
            buf[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif buf:
            seg = buf[at : at + draw(st.integers(1, 16))]
            buf[at:at] = seg
    return bytes(buf)
