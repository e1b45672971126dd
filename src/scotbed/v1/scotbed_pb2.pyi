from collections.abc import Iterable as _Iterable
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar

from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper

DESCRIPTOR: _descriptor.FileDescriptor

class SubscriptionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUBSCRIPTION_STATE_UNSPECIFIED: _ClassVar[SubscriptionState]
    PRIMARY: _ClassVar[SubscriptionState]
    SECONDARY: _ClassVar[SubscriptionState]
SUBSCRIPTION_STATE_UNSPECIFIED: SubscriptionState
PRIMARY: SubscriptionState
SECONDARY: SubscriptionState

class Value(_message.Message):
    __slots__ = ("f", "i", "s")
    S_FIELD_NUMBER: _ClassVar[int]
    I_FIELD_NUMBER: _ClassVar[int]
    F_FIELD_NUMBER: _ClassVar[int]
    s: str
    i: int
    f: float
    def __init__(self, s: str | None = ..., i: int | None = ..., f: float | None = ...) -> None: ...

class Predicate(_message.Message):
    __slots__ = ("attr", "hi", "op", "value")
    ATTR_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    HI_FIELD_NUMBER: _ClassVar[int]
    attr: str
    op: str
    value: Value
    hi: Value
    def __init__(self, attr: str | None = ..., op: str | None = ..., value: Value | _Mapping | None = ..., hi: Value | _Mapping | None = ...) -> None: ...

class Filter(_message.Message):
    __slots__ = ("predicates",)
    PREDICATES_FIELD_NUMBER: _ClassVar[int]
    predicates: _containers.RepeatedCompositeFieldContainer[Predicate]
    def __init__(self, predicates: _Iterable[Predicate | _Mapping] | None = ...) -> None: ...

class Notification(_message.Message):
    __slots__ = ("attrs", "intended_ns", "pub_id", "publisher", "sent_ns")
    class AttrsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: str | None = ..., value: Value | _Mapping | None = ...) -> None: ...
    PUB_ID_FIELD_NUMBER: _ClassVar[int]
    PUBLISHER_FIELD_NUMBER: _ClassVar[int]
    ATTRS_FIELD_NUMBER: _ClassVar[int]
    INTENDED_NS_FIELD_NUMBER: _ClassVar[int]
    SENT_NS_FIELD_NUMBER: _ClassVar[int]
    pub_id: str
    publisher: str
    attrs: _containers.MessageMap[str, Value]
    intended_ns: int
    sent_ns: int
    def __init__(self, pub_id: str | None = ..., publisher: str | None = ..., attrs: _Mapping[str, Value] | None = ..., intended_ns: int | None = ..., sent_ns: int | None = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ("filter", "sub_id", "subscriber")
    SUB_ID_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBER_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    sub_id: str
    subscriber: str
    filter: Filter
    def __init__(self, sub_id: str | None = ..., subscriber: str | None = ..., filter: Filter | _Mapping | None = ...) -> None: ...

class SubscribeAck(_message.Message):
    __slots__ = ("broker", "sub_id", "ts_ns")
    SUB_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_FIELD_NUMBER: _ClassVar[int]
    TS_NS_FIELD_NUMBER: _ClassVar[int]
    sub_id: str
    broker: str
    ts_ns: int
    def __init__(self, sub_id: str | None = ..., broker: str | None = ..., ts_ns: int | None = ...) -> None: ...

class Delivery(_message.Message):
    __slots__ = ("broker_ns", "hops", "notification", "sub_id")
    NOTIFICATION_FIELD_NUMBER: _ClassVar[int]
    SUB_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_NS_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    notification: Notification
    sub_id: str
    broker_ns: int
    hops: int
    def __init__(self, notification: Notification | _Mapping | None = ..., sub_id: str | None = ..., broker_ns: int | None = ..., hops: int | None = ...) -> None: ...

class SubscribeEvent(_message.Message):
    __slots__ = ("ack", "delivery")
    ACK_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_FIELD_NUMBER: _ClassVar[int]
    ack: SubscribeAck
    delivery: Delivery
    def __init__(self, ack: SubscribeAck | _Mapping | None = ..., delivery: Delivery | _Mapping | None = ...) -> None: ...

class UnsubscribeRequest(_message.Message):
    __slots__ = ("sub_id", "subscriber")
    SUB_ID_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBER_FIELD_NUMBER: _ClassVar[int]
    sub_id: str
    subscriber: str
    def __init__(self, sub_id: str | None = ..., subscriber: str | None = ...) -> None: ...

class UnsubscribeReply(_message.Message):
    __slots__ = ("found",)
    FOUND_FIELD_NUMBER: _ClassVar[int]
    found: bool
    def __init__(self, found: bool | None = ...) -> None: ...

class PublishRequest(_message.Message):
    __slots__ = ("notifications",)
    NOTIFICATIONS_FIELD_NUMBER: _ClassVar[int]
    notifications: _containers.RepeatedCompositeFieldContainer[Notification]
    def __init__(self, notifications: _Iterable[Notification | _Mapping] | None = ...) -> None: ...

class PublishReply(_message.Message):
    __slots__ = ("accepted",)
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    accepted: int
    def __init__(self, accepted: int | None = ...) -> None: ...

class SubscriptionMsg(_message.Message):
    __slots__ = ("cbv", "filter", "hops", "host_broker", "origin_ns", "packed", "state", "sub_id")
    SUB_ID_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    HOST_BROKER_FIELD_NUMBER: _ClassVar[int]
    CBV_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_NS_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    PACKED_FIELD_NUMBER: _ClassVar[int]
    sub_id: str
    filter: Filter
    host_broker: str
    cbv: int
    state: SubscriptionState
    origin_ns: int
    hops: int
    packed: _containers.RepeatedCompositeFieldContainer[SubscriptionMsg]
    def __init__(self, sub_id: str | None = ..., filter: Filter | _Mapping | None = ..., host_broker: str | None = ..., cbv: int | None = ..., state: SubscriptionState | str | None = ..., origin_ns: int | None = ..., hops: int | None = ..., packed: _Iterable[SubscriptionMsg | _Mapping] | None = ...) -> None: ...

class UnsubscriptionMsg(_message.Message):
    __slots__ = ("cbv", "filter", "hops", "host_broker", "origin_ns", "packed", "state", "sub_id")
    SUB_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_BROKER_FIELD_NUMBER: _ClassVar[int]
    CBV_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_NS_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    PACKED_FIELD_NUMBER: _ClassVar[int]
    sub_id: str
    host_broker: str
    cbv: int
    state: SubscriptionState
    origin_ns: int
    hops: int
    filter: Filter
    packed: _containers.RepeatedCompositeFieldContainer[SubscriptionMsg]
    def __init__(self, sub_id: str | None = ..., host_broker: str | None = ..., cbv: int | None = ..., state: SubscriptionState | str | None = ..., origin_ns: int | None = ..., hops: int | None = ..., filter: Filter | _Mapping | None = ..., packed: _Iterable[SubscriptionMsg | _Mapping] | None = ...) -> None: ...

class NotificationMsg(_message.Message):
    __slots__ = ("bids", "cbv", "dynamic", "has_cbv", "hops", "notification", "source_broker")
    NOTIFICATION_FIELD_NUMBER: _ClassVar[int]
    BIDS_FIELD_NUMBER: _ClassVar[int]
    CBV_FIELD_NUMBER: _ClassVar[int]
    HAS_CBV_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_FIELD_NUMBER: _ClassVar[int]
    SOURCE_BROKER_FIELD_NUMBER: _ClassVar[int]
    notification: Notification
    bids: _containers.RepeatedScalarFieldContainer[str]
    cbv: int
    has_cbv: bool
    hops: int
    dynamic: bool
    source_broker: str
    def __init__(self, notification: Notification | _Mapping | None = ..., bids: _Iterable[str] | None = ..., cbv: int | None = ..., has_cbv: bool | None = ..., hops: int | None = ..., dynamic: bool | None = ..., source_broker: str | None = ...) -> None: ...

class Control(_message.Message):
    __slots__ = ("args", "kind")
    class ArgsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: str | None = ..., value: str | None = ...) -> None: ...
    KIND_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    kind: str
    args: _containers.ScalarMap[str, str]
    def __init__(self, kind: str | None = ..., args: _Mapping[str, str] | None = ...) -> None: ...

class Envelope(_message.Message):
    __slots__ = ("control", "notification", "subscription", "unsubscription")
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    UNSUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NOTIFICATION_FIELD_NUMBER: _ClassVar[int]
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    subscription: SubscriptionMsg
    unsubscription: UnsubscriptionMsg
    notification: NotificationMsg
    control: Control
    def __init__(self, subscription: SubscriptionMsg | _Mapping | None = ..., unsubscription: UnsubscriptionMsg | _Mapping | None = ..., notification: NotificationMsg | _Mapping | None = ..., control: Control | _Mapping | None = ...) -> None: ...

class Batch(_message.Message):
    __slots__ = ("envelopes", "from_broker", "run_id", "seq")
    FROM_BROKER_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ENVELOPES_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    from_broker: str
    seq: int
    envelopes: _containers.RepeatedCompositeFieldContainer[Envelope]
    run_id: str
    def __init__(self, from_broker: str | None = ..., seq: int | None = ..., envelopes: _Iterable[Envelope | _Mapping] | None = ..., run_id: str | None = ...) -> None: ...

class BatchAck(_message.Message):
    __slots__ = ("seq",)
    SEQ_FIELD_NUMBER: _ClassVar[int]
    seq: int
    def __init__(self, seq: int | None = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LinkStatus(_message.Message):
    __slots__ = ("capacity_msgs_per_s", "ce", "connected", "dropped", "kind", "neighbour", "output_len", "overloaded", "received", "sent", "unacked")
    NEIGHBOUR_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_LEN_FIELD_NUMBER: _ClassVar[int]
    CE_FIELD_NUMBER: _ClassVar[int]
    OVERLOADED_FIELD_NUMBER: _ClassVar[int]
    SENT_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_MSGS_PER_S_FIELD_NUMBER: _ClassVar[int]
    UNACKED_FIELD_NUMBER: _ClassVar[int]
    neighbour: str
    kind: str
    output_len: int
    ce: float
    overloaded: bool
    sent: int
    received: int
    dropped: int
    connected: bool
    capacity_msgs_per_s: float
    unacked: int
    def __init__(self, neighbour: str | None = ..., kind: str | None = ..., output_len: int | None = ..., ce: float | None = ..., overloaded: bool | None = ..., sent: int | None = ..., received: int | None = ..., dropped: int | None = ..., connected: bool | None = ..., capacity_msgs_per_s: float | None = ..., unacked: int | None = ...) -> None: ...

class StatusReply(_message.Message):
    __slots__ = ("broker_id", "counters", "input_len", "last_activity_ns", "links", "local_subscriptions", "matching", "quiescent", "routing", "table_size")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: str | None = ..., value: int | None = ...) -> None: ...
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_LEN_FIELD_NUMBER: _ClassVar[int]
    TABLE_SIZE_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    QUIESCENT_FIELD_NUMBER: _ClassVar[int]
    LOCAL_SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    LAST_ACTIVITY_NS_FIELD_NUMBER: _ClassVar[int]
    ROUTING_FIELD_NUMBER: _ClassVar[int]
    MATCHING_FIELD_NUMBER: _ClassVar[int]
    broker_id: str
    input_len: int
    table_size: int
    links: _containers.RepeatedCompositeFieldContainer[LinkStatus]
    counters: _containers.ScalarMap[str, int]
    quiescent: bool
    local_subscriptions: int
    last_activity_ns: int
    routing: str
    matching: str
    def __init__(self, broker_id: str | None = ..., input_len: int | None = ..., table_size: int | None = ..., links: _Iterable[LinkStatus | _Mapping] | None = ..., counters: _Mapping[str, int] | None = ..., quiescent: bool | None = ..., local_subscriptions: int | None = ..., last_activity_ns: int | None = ..., routing: str | None = ..., matching: str | None = ...) -> None: ...

class TableRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TableEntry(_message.Message):
    __slots__ = ("cbv", "filter", "host_broker", "last_hop", "state", "sub_id")
    SUB_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_HOP_FIELD_NUMBER: _ClassVar[int]
    CBV_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    HOST_BROKER_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    sub_id: str
    last_hop: str
    cbv: int
    state: SubscriptionState
    host_broker: str
    filter: str
    def __init__(self, sub_id: str | None = ..., last_hop: str | None = ..., cbv: int | None = ..., state: SubscriptionState | str | None = ..., host_broker: str | None = ..., filter: str | None = ...) -> None: ...

class TableReply(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[TableEntry]
    def __init__(self, entries: _Iterable[TableEntry | _Mapping] | None = ...) -> None: ...

class FlushRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FlushReply(_message.Message):
    __slots__ = ("events_written",)
    EVENTS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    events_written: int
    def __init__(self, events_written: int | None = ...) -> None: ...

class DrainRequest(_message.Message):
    __slots__ = ("timeout_s",)
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    timeout_s: float
    def __init__(self, timeout_s: float | None = ...) -> None: ...

class DrainReply(_message.Message):
    __slots__ = ("quiescent",)
    QUIESCENT_FIELD_NUMBER: _ClassVar[int]
    quiescent: bool
    def __init__(self, quiescent: bool | None = ...) -> None: ...

class LinkCapacityRequest(_message.Message):
    __slots__ = ("capacity_msgs_per_s", "neighbour")
    NEIGHBOUR_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_MSGS_PER_S_FIELD_NUMBER: _ClassVar[int]
    neighbour: str
    capacity_msgs_per_s: float
    def __init__(self, neighbour: str | None = ..., capacity_msgs_per_s: float | None = ...) -> None: ...

class LinkCapacityReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
