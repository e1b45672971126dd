"""What the broker runtime writes: a message's wire envelope, a delivered notification, a table row.

Encoding lives here, apart from the processing loop that calls it; the forwarding side encodes each
message once and shares the envelope among its next hops. Messages are filled in place, field by
field: a message passed to a protobuf constructor is copied, so nesting constructors copies the
notification once per level.
"""

from __future__ import annotations

from scotbed.messages import Message, Publication, Subscription
from scotbed.routing.base import Entry
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.wire import fill_notification_msg, notification_to_pb, subscription_to_pb, unsubscription_to_pb


def table_entry(e: Entry) -> pb.TableEntry:
    return pb.TableEntry(
        sub_id=e.sub_id,
        last_hop=e.last_hop,
        cbv=e.cbv,
        state=int(e.state),  # type: ignore[arg-type]
        host_broker=e.host_broker,
        filter=e.filter.to_text(),
    )


def notification_pb(pub: Publication) -> pb.Notification:
    return notification_to_pb(pub.pub_id, pub.publisher, pub.attrs, pub.intended_ns, pub.sent_ns)


def delivery(n: pb.Notification, sub_id: str, broker_ns: int, hops: int) -> pb.Delivery:
    """A subscriber stream's delivery of ``n``, built in place (the notification is copied once)."""
    d = pb.Delivery()
    d.notification.CopyFrom(n)
    d.sub_id = sub_id
    d.broker_ns = broker_ns
    d.hops = hops
    return d


def encode(msg: Message, raw: pb.Notification | None) -> pb.Envelope:
    """The wire envelope of ``msg``; a notification reuses the notification it arrived in."""
    if isinstance(msg, Publication):
        n = raw if raw is not None and raw.pub_id == msg.pub_id else notification_pb(msg)
        env = pb.Envelope()
        fill_notification_msg(env.notification, msg, n)
        return env
    if isinstance(msg, Subscription):
        return pb.Envelope(subscription=subscription_to_pb(msg))
    return pb.Envelope(unsubscription=unsubscription_to_pb(msg))
