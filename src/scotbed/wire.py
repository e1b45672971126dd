"""Pure encoders between the domain model and the ``scotbed.v1`` protobuf messages.

Brokers, workloads and tests use these and nothing else to build or read wire
messages, so the filter semantics cannot drift between parts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scotbed.filters import Filter, FilterError, Predicate, Scalar, text_problem, value_problem
from scotbed.messages import Publication, Subscription, SubState, Unsubscription
from scotbed.v1 import scotbed_pb2 as pb


def value_to_pb(v: Scalar) -> pb.Value:
    if isinstance(v, bool):
        raise FilterError(f"booleans are not an attribute type: {v!r}")
    if (bad := value_problem(v)) is not None:
        raise FilterError(f"not an attribute value: {bad}")
    if isinstance(v, str):
        return pb.Value(s=v)
    if isinstance(v, int):
        return pb.Value(i=v)
    if isinstance(v, float):
        return pb.Value(f=v)
    raise FilterError(f"attribute values are strings, integers or floats, got {v!r}")


def value_from_pb(v: pb.Value) -> Scalar:
    kind = v.WhichOneof("kind")
    if kind == "s":
        return v.s
    if kind == "i":
        return v.i
    if kind == "f":
        return v.f
    raise FilterError("empty Value on the wire")


def filter_to_pb(f: Filter) -> pb.Filter:
    out = pb.Filter()
    for p in f.predicates:
        q = out.predicates.add(attr=p.attr, op=p.op)
        if p.op == "between":
            q.value.CopyFrom(value_to_pb(p.value[0]))
            q.hi.CopyFrom(value_to_pb(p.value[1]))
        elif p.op != "exists":
            q.value.CopyFrom(value_to_pb(p.value))
    return out


def filter_from_pb(f: pb.Filter) -> Filter:
    preds = []
    for k, q in enumerate(f.predicates):
        try:
            if q.op == "exists":
                preds.append(Predicate(q.attr, "exists"))
            elif q.op == "between":
                preds.append(Predicate(q.attr, "between", (value_from_pb(q.value), value_from_pb(q.hi))))
            else:
                preds.append(Predicate(q.attr, q.op, value_from_pb(q.value)))
        except FilterError as e:
            raise FilterError(f"filter.predicates[{k}]: {e}") from None
    return Filter(tuple(preds))


def attrs_to_pb(attrs: Mapping[str, Scalar], target: Any) -> None:
    """Fill a protobuf ``map<string, Value>`` field."""
    for k, v in attrs.items():
        if not k:
            raise FilterError("an attribute has an empty name")
        if (bad := text_problem(k)) is not None:
            raise FilterError(f"an attribute name: {bad}")
        target[k].CopyFrom(value_to_pb(v))


def attrs_from_pb(m: Any) -> dict[str, Scalar]:
    if "" in m:
        raise FilterError("an attribute has an empty name")
    return {k: value_from_pb(v) for k, v in m.items()}


def notification_to_pb(
    pub_id: str, publisher: str, attrs: Mapping[str, Scalar], intended_ns: int = 0, sent_ns: int = 0
) -> pb.Notification:
    n = pb.Notification(pub_id=pub_id, publisher=publisher, intended_ns=intended_ns, sent_ns=sent_ns)
    attrs_to_pb(attrs, n.attrs)
    return n


def publication_from_notification(n: pb.Notification, source_broker: str) -> Publication:
    return Publication(n.pub_id, n.publisher, attrs_from_pb(n.attrs), n.intended_ns, n.sent_ns, source_broker)


def subscription_to_pb(s: Subscription) -> pb.SubscriptionMsg:
    return pb.SubscriptionMsg(
        sub_id=s.sub_id,
        filter=filter_to_pb(s.filter),
        host_broker=s.host_broker,
        cbv=s.cbv,
        state=int(s.state),  # type: ignore[arg-type]
        origin_ns=s.origin_ns,
        hops=s.hops,
        packed=[subscription_to_pb(p) for p in s.packed],
        tree_version=s.tree_version,
    )


def subscription_from_pb(m: pb.SubscriptionMsg) -> Subscription:
    return Subscription(
        m.sub_id,
        filter_from_pb(m.filter),
        m.host_broker,
        m.cbv,
        SubState(m.state),
        m.origin_ns,
        m.hops,
        tuple(subscription_from_pb(p) for p in m.packed),
        m.tree_version,
    )


def unsubscription_to_pb(u: Unsubscription) -> pb.UnsubscriptionMsg:
    m = pb.UnsubscriptionMsg(
        sub_id=u.sub_id,
        host_broker=u.host_broker,
        cbv=u.cbv,
        state=int(u.state),  # type: ignore[arg-type]
        origin_ns=u.origin_ns,
        hops=u.hops,
        packed=[subscription_to_pb(p) for p in u.packed],
        prune=[pb.PruneTuple(phb=a, distance=d) for a, d in u.prune],
        tree_version=u.tree_version,
    )
    if u.filter is not None:
        m.filter.CopyFrom(filter_to_pb(u.filter))
    return m


def unsubscription_from_pb(m: pb.UnsubscriptionMsg) -> Unsubscription:
    return Unsubscription(
        m.sub_id,
        m.host_broker,
        m.cbv,
        SubState(m.state),
        m.origin_ns,
        m.hops,
        filter_from_pb(m.filter) if m.HasField("filter") else None,
        tuple(subscription_from_pb(p) for p in m.packed),
        tuple((t.phb, t.distance) for t in m.prune),
        m.tree_version,
    )


def fill_notification_msg(m: pb.NotificationMsg, p: Publication, n: pb.Notification) -> None:
    """Fill an empty ``m`` (a field of its envelope, so nothing is copied twice) with ``p`` around ``n``.

    Fields at their default stay unset, which serialises the same: proto3 scalars have no presence.
    """
    m.notification.CopyFrom(n)
    if p.bids:
        m.bids.extend(p.bids)
    if p.cbv is not None:
        m.cbv = p.cbv
        m.has_cbv = True
    m.hops = p.hops
    m.dynamic = p.dynamic
    m.source_broker = p.source_broker
    m.distance = p.distance
    m.count = p.count
    m.tree_version = p.tree_version


def publication_to_pb(p: Publication) -> pb.NotificationMsg:
    m = pb.NotificationMsg()
    fill_notification_msg(m, p, notification_to_pb(p.pub_id, p.publisher, p.attrs, p.intended_ns, p.sent_ns))
    return m


def publication_from_pb(m: pb.NotificationMsg) -> Publication:
    n = m.notification
    return Publication(
        n.pub_id,
        n.publisher,
        attrs_from_pb(n.attrs),
        n.intended_ns,
        n.sent_ns,
        m.source_broker,
        tuple(m.bids),
        m.cbv if m.has_cbv else None,
        m.hops,
        m.dynamic,
        m.distance,
        m.count,
        m.tree_version,
    )


def envelope(msg: Subscription | Unsubscription | Publication) -> pb.Envelope:
    if isinstance(msg, Subscription):
        return pb.Envelope(subscription=subscription_to_pb(msg))
    if isinstance(msg, Unsubscription):
        return pb.Envelope(unsubscription=unsubscription_to_pb(msg))
    env = pb.Envelope()
    fill_notification_msg(
        env.notification,
        msg,
        notification_to_pb(msg.pub_id, msg.publisher, msg.attrs, msg.intended_ns, msg.sent_ns),
    )
    return env


def from_envelope(env: pb.Envelope) -> Subscription | Unsubscription | Publication | None:
    """The domain message of an envelope; None for a control envelope."""
    body = env.WhichOneof("body")
    if body == "subscription":
        return subscription_from_pb(env.subscription)
    if body == "unsubscription":
        return unsubscription_from_pb(env.unsubscription)
    if body == "notification":
        return publication_from_pb(env.notification)
    return None
