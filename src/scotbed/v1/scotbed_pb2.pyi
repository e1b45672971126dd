from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

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
    __slots__ = ("s", "i", "f")
    S_FIELD_NUMBER: _ClassVar[int]
    I_FIELD_NUMBER: _ClassVar[int]
    F_FIELD_NUMBER: _ClassVar[int]
    s: str
    i: int
    f: float
    def __init__(self, s: _Optional[str] = ..., i: _Optional[int] = ..., f: _Optional[float] = ...) -> None: ...

class Predicate(_message.Message):
    __slots__ = ("attr", "op", "value", "hi")
    ATTR_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    HI_FIELD_NUMBER: _ClassVar[int]
    attr: str
    op: str
    value: Value
    hi: Value
    def __init__(self, attr: _Optional[str] = ..., op: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ..., hi: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...

class Filter(_message.Message):
    __slots__ = ("predicates",)
    PREDICATES_FIELD_NUMBER: _ClassVar[int]
    predicates: _containers.RepeatedCompositeFieldContainer[Predicate]
    def __init__(self, predicates: _Optional[_Iterable[_Union[Predicate, _Mapping]]] = ...) -> None: ...

class Notification(_message.Message):
    __slots__ = ("pub_id", "publisher", "attrs", "intended_ns", "sent_ns")
    class AttrsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
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
    def __init__(self, pub_id: _Optional[str] = ..., publisher: _Optional[str] = ..., attrs: _Optional[_Mapping[str, Value]] = ..., intended_ns: _Optional[int] = ..., sent_ns: _Optional[int] = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ("sub_id", "subscriber", "filter")
    SUB_ID_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBER_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    sub_id: str
    subscriber: str
    filter: Filter
    def __init__(self, sub_id: _Optional[str] = ..., subscriber: _Optional[str] = ..., filter: _Optional[_Union[Filter, _Mapping]] = ...) -> None: ...

class SubscribeAck(_message.Message):
    __slots__ = ("sub_id", "broker", "ts_ns")
    SUB_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_FIELD_NUMBER: _ClassVar[int]
    TS_NS_FIELD_NUMBER: _ClassVar[int]
    sub_id: str
    broker: str
    ts_ns: int
    def __init__(self, sub_id: _Optional[str] = ..., broker: _Optional[str] = ..., ts_ns: _Optional[int] = ...) -> None: ...

class Delivery(_message.Message):
    __slots__ = ("notification", "sub_id", "broker_ns", "hops")
    NOTIFICATION_FIELD_NUMBER: _ClassVar[int]
    SUB_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_NS_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    notification: Notification
    sub_id: str
    broker_ns: int
    hops: int
    def __init__(self, notification: _Optional[_Union[Notification, _Mapping]] = ..., sub_id: _Optional[str] = ..., broker_ns: _Optional[int] = ..., hops: _Optional[int] = ...) -> None: ...

class Deliveries(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[Delivery]
    def __init__(self, items: _Optional[_Iterable[_Union[Delivery, _Mapping]]] = ...) -> None: ...

class SubscribeEvent(_message.Message):
    __slots__ = ("ack", "deliveries")
    ACK_FIELD_NUMBER: _ClassVar[int]
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    ack: SubscribeAck
    deliveries: Deliveries
    def __init__(self, ack: _Optional[_Union[SubscribeAck, _Mapping]] = ..., deliveries: _Optional[_Union[Deliveries, _Mapping]] = ...) -> None: ...

class UnsubscribeRequest(_message.Message):
    __slots__ = ("sub_id", "subscriber")
    SUB_ID_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBER_FIELD_NUMBER: _ClassVar[int]
    sub_id: str
    subscriber: str
    def __init__(self, sub_id: _Optional[str] = ..., subscriber: _Optional[str] = ...) -> None: ...

class UnsubscribeReply(_message.Message):
    __slots__ = ("found",)
    FOUND_FIELD_NUMBER: _ClassVar[int]
    found: bool
    def __init__(self, found: _Optional[bool] = ...) -> None: ...

class PublishRequest(_message.Message):
    __slots__ = ("notifications",)
    NOTIFICATIONS_FIELD_NUMBER: _ClassVar[int]
    notifications: _containers.RepeatedCompositeFieldContainer[Notification]
    def __init__(self, notifications: _Optional[_Iterable[_Union[Notification, _Mapping]]] = ...) -> None: ...

class PublishReply(_message.Message):
    __slots__ = ("accepted",)
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    accepted: int
    def __init__(self, accepted: _Optional[int] = ...) -> None: ...

class SubscriptionMsg(_message.Message):
    __slots__ = ("sub_id", "filter", "host_broker", "cbv", "state", "origin_ns", "hops", "packed", "tree_version")
    SUB_ID_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    HOST_BROKER_FIELD_NUMBER: _ClassVar[int]
    CBV_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_NS_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    PACKED_FIELD_NUMBER: _ClassVar[int]
    TREE_VERSION_FIELD_NUMBER: _ClassVar[int]
    sub_id: str
    filter: Filter
    host_broker: str
    cbv: int
    state: SubscriptionState
    origin_ns: int
    hops: int
    packed: _containers.RepeatedCompositeFieldContainer[SubscriptionMsg]
    tree_version: int
    def __init__(self, sub_id: _Optional[str] = ..., filter: _Optional[_Union[Filter, _Mapping]] = ..., host_broker: _Optional[str] = ..., cbv: _Optional[int] = ..., state: _Optional[_Union[SubscriptionState, str]] = ..., origin_ns: _Optional[int] = ..., hops: _Optional[int] = ..., packed: _Optional[_Iterable[_Union[SubscriptionMsg, _Mapping]]] = ..., tree_version: _Optional[int] = ...) -> None: ...

class UnsubscriptionMsg(_message.Message):
    __slots__ = ("sub_id", "host_broker", "cbv", "state", "origin_ns", "hops", "filter", "packed", "prune", "tree_version")
    SUB_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_BROKER_FIELD_NUMBER: _ClassVar[int]
    CBV_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_NS_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    PACKED_FIELD_NUMBER: _ClassVar[int]
    PRUNE_FIELD_NUMBER: _ClassVar[int]
    TREE_VERSION_FIELD_NUMBER: _ClassVar[int]
    sub_id: str
    host_broker: str
    cbv: int
    state: SubscriptionState
    origin_ns: int
    hops: int
    filter: Filter
    packed: _containers.RepeatedCompositeFieldContainer[SubscriptionMsg]
    prune: _containers.RepeatedCompositeFieldContainer[PruneTuple]
    tree_version: int
    def __init__(self, sub_id: _Optional[str] = ..., host_broker: _Optional[str] = ..., cbv: _Optional[int] = ..., state: _Optional[_Union[SubscriptionState, str]] = ..., origin_ns: _Optional[int] = ..., hops: _Optional[int] = ..., filter: _Optional[_Union[Filter, _Mapping]] = ..., packed: _Optional[_Iterable[_Union[SubscriptionMsg, _Mapping]]] = ..., prune: _Optional[_Iterable[_Union[PruneTuple, _Mapping]]] = ..., tree_version: _Optional[int] = ...) -> None: ...

class PruneTuple(_message.Message):
    __slots__ = ("phb", "distance")
    PHB_FIELD_NUMBER: _ClassVar[int]
    DISTANCE_FIELD_NUMBER: _ClassVar[int]
    phb: str
    distance: int
    def __init__(self, phb: _Optional[str] = ..., distance: _Optional[int] = ...) -> None: ...

class NotificationMsg(_message.Message):
    __slots__ = ("notification", "bids", "cbv", "has_cbv", "hops", "dynamic", "source_broker", "distance", "count", "tree_version")
    NOTIFICATION_FIELD_NUMBER: _ClassVar[int]
    BIDS_FIELD_NUMBER: _ClassVar[int]
    CBV_FIELD_NUMBER: _ClassVar[int]
    HAS_CBV_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_FIELD_NUMBER: _ClassVar[int]
    SOURCE_BROKER_FIELD_NUMBER: _ClassVar[int]
    DISTANCE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    TREE_VERSION_FIELD_NUMBER: _ClassVar[int]
    notification: Notification
    bids: _containers.RepeatedScalarFieldContainer[str]
    cbv: int
    has_cbv: bool
    hops: int
    dynamic: bool
    source_broker: str
    distance: int
    count: int
    tree_version: int
    def __init__(self, notification: _Optional[_Union[Notification, _Mapping]] = ..., bids: _Optional[_Iterable[str]] = ..., cbv: _Optional[int] = ..., has_cbv: _Optional[bool] = ..., hops: _Optional[int] = ..., dynamic: _Optional[bool] = ..., source_broker: _Optional[str] = ..., distance: _Optional[int] = ..., count: _Optional[int] = ..., tree_version: _Optional[int] = ...) -> None: ...

class Control(_message.Message):
    __slots__ = ("kind", "args", "data")
    class ArgsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    KIND_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    kind: str
    args: _containers.ScalarMap[str, str]
    data: bytes
    def __init__(self, kind: _Optional[str] = ..., args: _Optional[_Mapping[str, str]] = ..., data: _Optional[bytes] = ...) -> None: ...

class Envelope(_message.Message):
    __slots__ = ("subscription", "unsubscription", "notification", "control")
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    UNSUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NOTIFICATION_FIELD_NUMBER: _ClassVar[int]
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    subscription: SubscriptionMsg
    unsubscription: UnsubscriptionMsg
    notification: NotificationMsg
    control: Control
    def __init__(self, subscription: _Optional[_Union[SubscriptionMsg, _Mapping]] = ..., unsubscription: _Optional[_Union[UnsubscriptionMsg, _Mapping]] = ..., notification: _Optional[_Union[NotificationMsg, _Mapping]] = ..., control: _Optional[_Union[Control, _Mapping]] = ...) -> None: ...

class Batch(_message.Message):
    __slots__ = ("from_broker", "seq", "envelopes", "run_id")
    FROM_BROKER_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ENVELOPES_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    from_broker: str
    seq: int
    envelopes: _containers.RepeatedCompositeFieldContainer[Envelope]
    run_id: str
    def __init__(self, from_broker: _Optional[str] = ..., seq: _Optional[int] = ..., envelopes: _Optional[_Iterable[_Union[Envelope, _Mapping]]] = ..., run_id: _Optional[str] = ...) -> None: ...

class BatchAck(_message.Message):
    __slots__ = ("seq", "incarnation")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    seq: int
    incarnation: str
    def __init__(self, seq: _Optional[int] = ..., incarnation: _Optional[str] = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LinkStatus(_message.Message):
    __slots__ = ("neighbour", "kind", "output_len", "ce", "overloaded", "sent", "received", "dropped", "connected", "capacity_msgs_per_s", "unacked", "latency_ms", "jitter_ms")
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
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    JITTER_MS_FIELD_NUMBER: _ClassVar[int]
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
    latency_ms: float
    jitter_ms: float
    def __init__(self, neighbour: _Optional[str] = ..., kind: _Optional[str] = ..., output_len: _Optional[int] = ..., ce: _Optional[float] = ..., overloaded: _Optional[bool] = ..., sent: _Optional[int] = ..., received: _Optional[int] = ..., dropped: _Optional[int] = ..., connected: _Optional[bool] = ..., capacity_msgs_per_s: _Optional[float] = ..., unacked: _Optional[int] = ..., latency_ms: _Optional[float] = ..., jitter_ms: _Optional[float] = ...) -> None: ...

class StatusReply(_message.Message):
    __slots__ = ("broker_id", "input_len", "table_size", "links", "counters", "quiescent", "local_subscriptions", "last_activity_ns", "routing", "matching", "tree_version", "tree_finished", "loop_lag_ms_max")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
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
    TREE_VERSION_FIELD_NUMBER: _ClassVar[int]
    TREE_FINISHED_FIELD_NUMBER: _ClassVar[int]
    LOOP_LAG_MS_MAX_FIELD_NUMBER: _ClassVar[int]
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
    tree_version: int
    tree_finished: int
    loop_lag_ms_max: float
    def __init__(self, broker_id: _Optional[str] = ..., input_len: _Optional[int] = ..., table_size: _Optional[int] = ..., links: _Optional[_Iterable[_Union[LinkStatus, _Mapping]]] = ..., counters: _Optional[_Mapping[str, int]] = ..., quiescent: _Optional[bool] = ..., local_subscriptions: _Optional[int] = ..., last_activity_ns: _Optional[int] = ..., routing: _Optional[str] = ..., matching: _Optional[str] = ..., tree_version: _Optional[int] = ..., tree_finished: _Optional[int] = ..., loop_lag_ms_max: _Optional[float] = ...) -> None: ...

class TableRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TableEntry(_message.Message):
    __slots__ = ("sub_id", "last_hop", "cbv", "state", "host_broker", "filter")
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
    def __init__(self, sub_id: _Optional[str] = ..., last_hop: _Optional[str] = ..., cbv: _Optional[int] = ..., state: _Optional[_Union[SubscriptionState, str]] = ..., host_broker: _Optional[str] = ..., filter: _Optional[str] = ...) -> None: ...

class TableReply(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[TableEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[TableEntry, _Mapping]]] = ...) -> None: ...

class FlushRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FlushReply(_message.Message):
    __slots__ = ("events_written",)
    EVENTS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    events_written: int
    def __init__(self, events_written: _Optional[int] = ...) -> None: ...

class DrainRequest(_message.Message):
    __slots__ = ("timeout_s",)
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    timeout_s: float
    def __init__(self, timeout_s: _Optional[float] = ...) -> None: ...

class DrainReply(_message.Message):
    __slots__ = ("quiescent",)
    QUIESCENT_FIELD_NUMBER: _ClassVar[int]
    quiescent: bool
    def __init__(self, quiescent: _Optional[bool] = ...) -> None: ...

class LinkCapacityRequest(_message.Message):
    __slots__ = ("neighbour", "capacity_msgs_per_s")
    NEIGHBOUR_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_MSGS_PER_S_FIELD_NUMBER: _ClassVar[int]
    neighbour: str
    capacity_msgs_per_s: float
    def __init__(self, neighbour: _Optional[str] = ..., capacity_msgs_per_s: _Optional[float] = ...) -> None: ...

class LinkCapacityReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NewLink(_message.Message):
    __slots__ = ("neighbour", "address", "kind", "type", "cluster", "region")
    NEIGHBOUR_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    REGION_FIELD_NUMBER: _ClassVar[int]
    neighbour: str
    address: str
    kind: str
    type: str
    cluster: int
    region: str
    def __init__(self, neighbour: _Optional[str] = ..., address: _Optional[str] = ..., kind: _Optional[str] = ..., type: _Optional[str] = ..., cluster: _Optional[int] = ..., region: _Optional[str] = ...) -> None: ...

class RelinkRequest(_message.Message):
    __slots__ = ("up", "down", "next_hop", "version")
    class NextHopEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    UP_FIELD_NUMBER: _ClassVar[int]
    DOWN_FIELD_NUMBER: _ClassVar[int]
    NEXT_HOP_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    up: _containers.RepeatedCompositeFieldContainer[NewLink]
    down: _containers.RepeatedScalarFieldContainer[str]
    next_hop: _containers.ScalarMap[str, str]
    version: int
    def __init__(self, up: _Optional[_Iterable[_Union[NewLink, _Mapping]]] = ..., down: _Optional[_Iterable[str]] = ..., next_hop: _Optional[_Mapping[str, str]] = ..., version: _Optional[int] = ...) -> None: ...

class RelinkReply(_message.Message):
    __slots__ = ("repointed",)
    REPOINTED_FIELD_NUMBER: _ClassVar[int]
    repointed: int
    def __init__(self, repointed: _Optional[int] = ...) -> None: ...

class LinkLatencyRequest(_message.Message):
    __slots__ = ("neighbour", "latency_ms", "jitter_ms")
    NEIGHBOUR_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    JITTER_MS_FIELD_NUMBER: _ClassVar[int]
    neighbour: str
    latency_ms: float
    jitter_ms: float
    def __init__(self, neighbour: _Optional[str] = ..., latency_ms: _Optional[float] = ..., jitter_ms: _Optional[float] = ...) -> None: ...

class LinkLatencyReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PeerMsg(_message.Message):
    __slots__ = ("run", "src", "dst", "kind", "body")
    RUN_FIELD_NUMBER: _ClassVar[int]
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    run: str
    src: int
    dst: int
    kind: str
    body: bytes
    def __init__(self, run: _Optional[str] = ..., src: _Optional[int] = ..., dst: _Optional[int] = ..., kind: _Optional[str] = ..., body: _Optional[bytes] = ...) -> None: ...

class PeerAck(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PeerCall(_message.Message):
    __slots__ = ("op", "body")
    OP_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    op: str
    body: bytes
    def __init__(self, op: _Optional[str] = ..., body: _Optional[bytes] = ...) -> None: ...

class PeerReply(_message.Message):
    __slots__ = ("body",)
    BODY_FIELD_NUMBER: _ClassVar[int]
    body: bytes
    def __init__(self, body: _Optional[bytes] = ...) -> None: ...
