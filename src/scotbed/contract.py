"""The result contract (docs/design.md §5): run-directory paths and event names, in one place.

Writers (the broker's event log, the workload processes, the orchestrator's
run and render) and readers (the analysis, the test-data synthesiser) name
files and events through these constants, so a rename happens here once.
Paths are relative to the run directory and use ``/``; join them onto a
``Path`` (``run_dir / contract.SUMMARY``).
"""

from __future__ import annotations

# --- run directory ---------------------------------------------------------------------------

EVENTS_DIR = "events"  # *.jsonl[.gz], one file per broker and per client process
WORKLOAD_DIR = "workload"  # what was issued, with content
LOCUST_DIR = "locust"  # Locust's own CSV/HTML output
ANALYSIS_DIR = "analysis"  # summary.json, per-metric tables, plots
MANIFESTS_DIR = "manifests"  # what was deployed (k8s or compose)
#: k8s: the brokers' objects, then the workload's (in manifests/ and in a `scotbed render` folder)
K8S_OBJECTS = "k8s.yaml"
K8S_WORKLOAD_OBJECTS = "workload.yaml"
#: the folders every run directory has
RUN_DIRS = (EVENTS_DIR, WORKLOAD_DIR, LOCUST_DIR, ANALYSIS_DIR, MANIFESTS_DIR)

SPEC_RESOLVED = "spec.resolved.yaml"  # the spec after defaults and --set
TOPOLOGY = "topology.json"  # brokers with coordinates, links with kinds
BROKERS = "brokers.json"  # the all-brokers config file (manifests/, a render folder, a launcher workdir)
REPORT = "report.html"  # self-contained, opens offline
FAULTS = "faults.jsonl"  # the executed fault timeline (scotbed.orchestrator.faults)

PLAN_FILE = "plan.json"  # the workload plan's file name (in workload/, a ConfigMap, a render folder)
PLAN = f"{WORKLOAD_DIR}/{PLAN_FILE}"
#: the workload record kinds: ``workload/<kind>.jsonl``, written as ``<kind>.<process>.jsonl`` parts
WORKLOAD_KINDS = ("subscriptions", "publications")
SUBSCRIPTIONS = f"{WORKLOAD_DIR}/subscriptions.jsonl"
PUBLICATIONS = f"{WORKLOAD_DIR}/publications.jsonl"
#: a scripted run's executed operations, one line each with its start and end (ns)
SCRIPT_OPS = f"{WORKLOAD_DIR}/script_ops.jsonl"

SUMMARY = f"{ANALYSIS_DIR}/summary.json"
SPARK_LOG = f"{ANALYSIS_DIR}/spark.log"  # the output of the analysis's JVM: its warnings, Spark's logging
PLOTS_DIR = f"{ANALYSIS_DIR}/plots"
OFFENDERS = f"{ANALYSIS_DIR}/correctness_offenders.parquet"  # the oracle's missing/duplicate/false pairs
DELAY_CDF = f"{ANALYSIS_DIR}/delay_cdf.parquet"  # series, quantile, delay_ms
#: the delay CDF's series: (label in the table, the deliveries' column it is a quantile of)
DELAY_CDF_SERIES = (("intended → receive", "delay_ms"), ("sent → receive", "send_delay_ms"))

# --- campaign directory (scotbed campaign): the campaign as it ran, its cells, their runs ------------

CAMPAIGN_FILE = "campaign.yaml"  # the campaign's matrix, repetitions and set: values
CAMPAIGN_INDEX = "index.json"  # {"cells": {key: {status, run_dir, values, fingerprint, ...}}}
CAMPAIGN_RUNS = "runs"  # one run directory per cell, named by the cell

LOCUST_CSV_PREFIX = f"{LOCUST_DIR}/locust"  # Locust's --csv prefix
LOCUST_HTML = f"{LOCUST_DIR}/{REPORT}"  # Locust's --html report
LOCUST_STATUS = f"{LOCUST_DIR}/status.json"  # the workload's progress, read by the orchestrator
LOCUST_RELEASE = f"{LOCUST_DIR}/release"  # the orchestrator's go signal to the publishers
#: the orchestrator's stop signal: the subscribers keep their streams open until it exists (file release)
LOCUST_STOP = f"{LOCUST_DIR}/stop"
#: the drain record: whether the brokers went quiescent before ``timeouts.drain_s``, the backlog over
#: time and at stop (written by the host-side Locust driver, read by the analysis)
DRAIN = "drain.json"

# --- event names (one JSON object a line: ts_ns, node, ev, ...) -----------------------------------

SUB_IN = "sub_in"
SUB_OUT = "sub_out"
UNSUB_IN = "unsub_in"
UNSUB_OUT = "unsub_out"
NOTIF_IN = "notif_in"
NOTIF_OUT = "notif_out"  # with ``dynamic`` for re-routed copies
MATCH = "match"  # with ``us``
DELIVER = "deliver"
QUEUE = "queue"  # periodic, per link: ``len``, ``ce``; the input (link ""): also ``peak`` since the last
TABLE = "table"  # periodic routing-table size
DROP = "drop"  # a message the broker could not forward (overflow, dead link), with ``reason``
BROKER_EVENTS = (
    SUB_IN,
    SUB_OUT,
    UNSUB_IN,
    UNSUB_OUT,
    NOTIF_IN,
    NOTIF_OUT,
    MATCH,
    DELIVER,
    QUEUE,
    TABLE,
    DROP,
)
#: overlay changes of a self-organising tree: the simulator logs them with ``link`` (the two broker
#: ids), a broker (``Admin.Relink``) with ``link`` = the neighbour and, on link_down, ``lost``
#: (envelopes still queued, dropped); not routing work, so not in BROKER_EVENTS
LINK_UP = "link_up"
LINK_DOWN = "link_down"
#: the topology manager (self-organising trees, docs/design.md §10), per broker: ``topo`` is one decision
#: (``phase`` evaluate|agree|swap, ``outcome``, ``reason``, ``heuristic``, ``inputs`` as JSON text);
#: ``topo_out`` one control message it sent (``kind``, ``link``, ``size`` in bytes): the heuristic's overhead
TOPO = "topo"
TOPO_OUT = "topo_out"
#: the topology manager switched to cost table ``n`` of the run's redraw timeline (docs/design.md §10,
#: ``topology.costs.redraws``); the analysis prices this broker's later events with that table
COST_REDRAW = "cost_redraw"
#: a link hello from a broker that is not (yet) a neighbour, refused (``link``, ``reason``): the
#: dialer redials; a hello carries no message, so nothing is lost (the dial race of a link opened at
#: run time, whose far end adopts the new tree a moment later). Not a ``drop``.
REFUSED = "refused"

#: periodic, per broker: event-loop lag (``lag_ms_max``, ``lag_ms_mean`` over ``probes`` wake-ups) and
#: process CPU share (``cpu``, 1.0 = one core) over ``wall_ms``, and on Linux the loop thread's run-queue wait
#: (``wait_ms``); not routing work, so not in BROKER_EVENTS
LOOP = "loop"
#: the same figures for a workload (Locust) process, ``node`` = the process (``locust-w0``): a late
#: client loop delays sends and receive timestamps, and the clients' CPU counts in the host's load
CLIENT_LOOP = "client_loop"

SUBSCRIBE = "subscribe"
UNSUBSCRIBE = "unsubscribe"
PUBLISH = "publish"
RECEIVE = "receive"
CLIENT_EVENTS = (SUBSCRIBE, UNSUBSCRIBE, PUBLISH, RECEIVE)
#: a client's session at its broker (``broker``, ``state``: ``lost`` with its ``reason``, or ``restored``):
#: lost when the fault timeline takes the broker down, opened again once it serves (docs/design.md §5)
SESSION = "session"
#: the event logs of the workload processes are ``events/<CLIENT_PROCESS_PREFIX>…`` (``locust-w0``)
CLIENT_PROCESS_PREFIX = "locust-"
#: the high-rate publisher's client name (``workload.hrp``): its publications are the burst
HRP_CLIENT = "h0"

#: peers (Vinifera, docs/design.md §10): a peer logs ``subscribe`` (``ranges``), ``publish`` (``pub_id``,
#: ``values``, ``round``), ``deliver`` (``pub_id``, ``hops``, ``tree_hops``) and these, with ``src``/``dst``
#: peer names; ``ev_*`` carry ``pub_id``, ``attr``, ``phase``, ``hops`` (``ev_in`` also ``round``);
#: ``view`` the links after a change
LOOKUP_IN = "lookup_in"
LOOKUP_OUT = "lookup_out"
EV_IN = "ev_in"
EV_OUT = "ev_out"
VIEW = "view"
#: an event message a peer dropped: its per-round capacity was taken (paper §V-D); fields of ``ev_in``
EV_DROP = "ev_drop"
PEER_EVENTS = (SUBSCRIBE, PUBLISH, DELIVER, LOOKUP_IN, LOOKUP_OUT, EV_IN, EV_OUT, VIEW, EV_DROP)


#: the topology kind of a peers run (spec ``topology.kind``), which the analysis tells apart
PEERS_KIND = "peers"
#: the node-name prefix of a peer in the event log (the rest is its name)
PEER_PREFIX = "peer-"


def peer_node(name: int) -> str:
    """A peer's node name in the event log and its events file's stem."""
    return f"{PEER_PREFIX}{name}"


def peer_name(node: str) -> int:
    """The peer name behind :func:`peer_node`'s node name."""
    return int(node.removeprefix(PEER_PREFIX))


def events_file(process: str, suffix: str = ".jsonl") -> str:
    """A process's event log (a broker id or a workload process name)."""
    return f"{EVENTS_DIR}/{process}{suffix}"


def workload_part(kind: str, process: str) -> str:
    """One workload process's part of ``workload/<kind>.jsonl``."""
    return f"{WORKLOAD_DIR}/{kind}.{process}.jsonl"


# --- inside a broker pod or container --------------------------------------------------------------

#: the file a broker keeps while its health service says SERVING (``--ready-file``), read by the exec
#: readiness probe on Kubernetes servers without gRPC probes and by the compose healthcheck; under /tmp,
#: the pod's writable emptyDir or the container's tmpfs (the root file system is read-only)
BROKER_READY_FILE = "/tmp/scotbed-broker.ready"

#: the backend whose runs are in virtual time (docs/design.md §11): its ``ts_ns`` are no host's clock
SIM_BACKEND = "sim"
