"""Synthesise a run directory in the docs/design.md §5 contract: the analysis's test and benchmark input,
and the training runs of its JVM's class archive (:mod:`scotbed.analysis.jvm_archive_build`).

It plays reverse-path forwarding (or flooding) on a tree overlay with a simple
timing model (per-hop latency, a high-rate publisher that inflates delays
while it runs and for a decay time after) and writes what brokers and clients
would log, through the writers they use (the broker's :class:`EventLog`, the
workload's :class:`JsonlWriter`), so a format change reaches this data too.
Deliveries follow :mod:`scotbed.filters` semantics, so a generated log is
correct by construction; tests inject faults into it.
"""

from __future__ import annotations

import json
import random
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from scotbed import contract, routing
from scotbed.broker.eventlog import EventLog
from scotbed.filters import Filter
from scotbed.topology import Scot, kary, path
from scotbed.workloads.records import JsonlWriter

MS = 1_000_000


@dataclass(frozen=True)
class SynthSpec:
    brokers: int = 6  # a path of brokers when fanout == 0, else a balanced tree of this depth
    fanout: int = 0
    subscribers: int = 20
    symbols: int = 10
    publishers: int = 3
    publications: int = 200
    unsubscribe_fraction: float = 0.0  # subscriptions that end halfway through the publications
    flooding: bool = False  # every link; else reverse-path forwarding towards interested brokers only
    rate_per_s: float = 100.0  # publications per second, all publishers together
    hop_ms: float = 1.0
    burst_publications: int = 0  # publications of the high-rate publisher (contract.HRP_CLIENT)
    burst_rate_per_s: float = 1000.0
    burst_extra_ms: float = 400.0  # extra delay while the burst runs, decaying linearly after it
    burst_decay_s: float = 0.5
    worker_processes: int = 2
    gz: bool = False
    seed: int = 1
    start_ns: int = 1_700_000_000_000_000_000
    stability_window: int = 50
    loop_lag_ms: float | None = None  # when set, each broker logs a ``loop`` event with each sample:
    loop_cpu: float = 0.1  # mean lag loop_lag_ms, max lag twice it, this CPU share (of one core)
    cores: int = 2  # the host's cores the run records (``run.host.cpus``) when loop events are on
    client_lag_ms: float | None = None  # when set, each workload process logs ``client_loop`` the same way
    client_cpu: float = 0.05


# A 13-broker tree with 200 subscribers on 100 symbols and 10 publishers at 2,000/s: the runs of
# benchmarks/analysis_scale.py, and the large run the analysis JVM's AOT cache is trained on.
SCALE = SynthSpec(brokers=2, fanout=3, subscribers=200, symbols=100, publishers=10, rate_per_s=2000.0)


class _Logs:
    """One broker-format event log per node, opened on its first event, and the two workload files."""

    def __init__(self, root: Path, gz: bool) -> None:
        self.root = root
        self.suffix = ".jsonl.gz" if gz else ".jsonl"
        self.logs: dict[str, EventLog] = {}
        self.count = 0
        self.subscriptions = JsonlWriter(root / contract.SUBSCRIPTIONS)
        self.publications = JsonlWriter(root / contract.PUBLICATIONS)

    def write(self, node: str, ts: int, ev: str, **fields: Any) -> None:
        log = self.logs.get(node)
        if log is None:
            log = EventLog(node, str(self.root / contract.events_file(node, self.suffix)), 1 << 16)
            self.logs[node] = log
        log.emit_at(ts, ev, **fields)
        self.count += 1

    def close(self) -> None:
        for log in self.logs.values():
            log.close()
        self.subscriptions.close()
        self.publications.close()


def _tree_paths(adj: dict[str, list[str]], src: str) -> dict[str, str | None]:
    parent: dict[str, str | None] = {src: None}
    q = deque([src])
    while q:
        x = q.popleft()
        for y in adj[x]:
            if y not in parent:
                parent[y] = x
                q.append(y)
    return parent


def synthesise(out: Path, spec: SynthSpec = SynthSpec()) -> dict[str, Any]:
    """Write a run directory at ``out``; returns counts (events written, deliveries, ...)."""
    rng = random.Random(spec.seed)
    factor = kary(spec.fanout, spec.brokers) if spec.fanout else path(spec.brokers)
    scot = Scot(factor, 1)
    _write_run_files(out, spec, scot)
    brokers = [b.id for b in scot.brokers]
    adj: dict[str, list[str]] = {b: [n.id for n in scot.neighbours(b)] for b in brokers}
    logs = _Logs(out, spec.gz)
    hop = int(spec.hop_ms * MS)
    t = spec.start_ns

    subs, t = _subscribe_all(spec, rng, logs, adj, t)
    pub_k = 0
    stored: dict[str, set[str]] = {b: {s["sub_id"] for s in subs} for b in brokers}
    t += 50 * MS
    for b in brokers:
        logs.write(b, t, contract.TABLE, size=len(subs))

    # --- publications
    by_symbol: dict[str, list[dict[str, Any]]] = {}
    for s in subs:
        by_symbol.setdefault(str(s["filter"].predicates[0].value), []).append(s)
    unsub_at = spec.publications // 2
    leaving = set(rng.sample([s["sub_id"] for s in subs], int(spec.unsubscribe_fraction * len(subs))))
    active = {s["sub_id"] for s in subs}
    n_normal, n_burst = spec.publications, spec.burst_publications
    burst_start_i = n_normal // 3 if n_burst else -1
    deliveries = 0
    burst_end_ns: int | None = None
    burst_start_ns: int | None = None
    sample_next = t
    i_normal = 0
    i_burst = 0
    while i_normal < n_normal or i_burst < n_burst:
        in_burst = n_burst and i_normal >= burst_start_i and i_burst < n_burst
        if in_burst:
            if burst_start_ns is None:
                burst_start_ns = t
            publisher, pid = contract.HRP_CLIENT, f"h{i_burst}"
            i_burst += 1
            if i_burst == n_burst:
                burst_end_ns = t
            gap = int(1e9 / spec.burst_rate_per_s)
        else:
            pub_k = i_normal % spec.publishers
            publisher, pid = f"pub-{pub_k}", f"p{i_normal}"
            i_normal += 1
            gap = int(1e9 / spec.rate_per_s)
            if i_normal == unsub_at and leaving:
                _unsubscribe(logs, adj, [s for s in subs if s["sub_id"] in leaving], t, hop)
                active -= leaving
                t += 10 * hop * len(brokers)
        extra = _burst_extra(spec, t, burst_start_ns, burst_end_ns)
        pub_k = 0 if in_burst else pub_k
        host = brokers[0] if in_burst else brokers[(pub_k * 7 + 3) % len(brokers)]
        symbol = f"S{rng.randrange(spec.symbols)}"
        attrs: dict[str, Any] = {"symbol": symbol, "price": rng.randrange(100)}
        intended, sent = t, t + rng.randrange(50_000)
        logs.publications.write(
            {"ts_ns": sent, "intended_ns": intended, "pub_id": pid}
            | {"publisher": publisher, "broker": host, "attrs": attrs}
        )
        pworker = f"pubworker-{pub_k % 2}"
        logs.write(pworker, sent, contract.PUBLISH, pub_id=pid, intended_ns=intended, sent_ns=sent)
        matching = [
            s for s in by_symbol.get(symbol, []) if s["sub_id"] in active and s["filter"].matches(attrs)
        ]
        deliveries += len(matching)
        _route(logs, adj, host, pid, sent + hop // 4, hop, extra, matching, spec.flooding, len(stored[host]))
        t += gap
        while sample_next <= t:
            _sample_queues(logs, adj, sample_next, extra, rng)
            for b in brokers:
                logs.write(b, sample_next, contract.TABLE, size=len(active))
            _sample_loop(logs, brokers, sample_next, spec)
            sample_next += 250 * MS
    logs.close()
    return {
        "events": logs.count,
        "deliveries": deliveries,
        "brokers": len(brokers),
        "burst": (burst_start_ns, burst_end_ns),
    }


def _factor_block(spec: SynthSpec) -> dict[str, Any]:
    """The spec's ``topology.acyclic`` block of the tree :func:`synthesise` builds."""
    if spec.fanout:
        return {"kind": "kary", "fanout": spec.fanout, "depth": spec.brokers}
    return {"kind": "path", "n": spec.brokers}


def _write_run_files(out: Path, spec: SynthSpec, scot: Scot) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / contract.EVENTS_DIR).mkdir(exist_ok=True)
    (out / contract.WORKLOAD_DIR).mkdir(exist_ok=True)
    (out / contract.TOPOLOGY).write_text(json.dumps(scot.to_json(), indent=1))
    run_spec = {
        "name": "synth",
        "seed": spec.seed,
        "topology": {"kind": "tree", "acyclic": _factor_block(spec)},
        "routing": routing.BASELINE_ROUTING if spec.flooding else routing.DEFAULT_BROKER_ROUTING,
        "matching": "naive",
        "workload": {"subscribers": spec.subscribers, "publishers": spec.publishers, "hrp": None},
        "analysis": {"stability_window": spec.stability_window},
    }
    if spec.loop_lag_ms is not None:
        run_spec["run"] = {"host": {"cpus": spec.cores}}
    (out / contract.SPEC_RESOLVED).write_text(yaml.safe_dump(run_spec, sort_keys=False))


def _subscribe_all(
    spec: SynthSpec, rng: random.Random, logs: _Logs, adj: dict[str, list[str]], t: int
) -> tuple[list[dict[str, Any]], int]:
    """Every subscription, flooded over the tree one hop at a time; returns them and the time after."""
    brokers = list(adj)
    workers = [f"worker-{k}" for k in range(spec.worker_processes)]
    hop = int(spec.hop_ms * MS)
    subs: list[dict[str, Any]] = []
    for k in range(spec.subscribers):
        sid, host = f"s{k}", rng.choice(brokers)
        flt: list[dict[str, Any]] = [
            {"attr": "symbol", "op": "=", "value": f"S{rng.randrange(spec.symbols)}"}
        ]
        if k % 3 == 0:
            flt.append({"attr": "price", "op": "<", "value": 50})
        worker = workers[k % len(workers)]
        subs.append({"sub_id": sid, "broker": host, "filter": Filter.from_json(flt), "worker": worker})
        line = {"ts_ns": t, "op": "subscribe", "sub_id": sid, "subscriber": f"sub-{k}", "broker": host}
        logs.subscriptions.write({**line, "filter": flt})
        logs.write(worker, t, contract.SUBSCRIBE, sub_id=sid)
        _flood_sub(logs, adj, host, sid, t + hop // 4, hop, contract.SUB_IN, contract.SUB_OUT)
        t += 2 * MS
    return subs, t


def _unsubscribe(
    logs: _Logs, adj: dict[str, list[str]], leaving: list[dict[str, Any]], t: int, hop: int
) -> None:
    for s in leaving:
        logs.write(s["worker"], t, contract.UNSUBSCRIBE, sub_id=s["sub_id"])
        _flood_sub(
            logs, adj, s["broker"], s["sub_id"], t + hop // 4, hop, contract.UNSUB_IN, contract.UNSUB_OUT
        )
        wl_line = {
            "ts_ns": t,
            "op": "unsubscribe",
            "sub_id": s["sub_id"],
            "subscriber": s["sub_id"].replace("s", "sub-"),
            "broker": s["broker"],
        }
        logs.subscriptions.write(wl_line)


def _burst_extra(spec: SynthSpec, t: int, start_ns: int | None, end_ns: int | None) -> int:
    """Extra delay at ``t``: ramping up over 200 ms of the burst, decaying linearly after it."""
    if start_ns is None:
        return 0
    if end_ns is None:
        return int(spec.burst_extra_ms * MS * min(1.0, (t - start_ns) / 2e8))
    left = 1 - (t - end_ns) / (spec.burst_decay_s * 1e9)
    return int(spec.burst_extra_ms * MS * max(0.0, left))


def _flood_sub(
    logs: _Logs, adj: dict[str, list[str]], host: str, sid: str, t0: int, hop: int, ev_in: str, ev_out: str
) -> None:
    logs.write(host, t0, ev_in, sub_id=sid, link="")
    parent = _tree_paths(adj, host)
    depth: dict[str, int] = {host: 0}
    for b in parent:  # BFS order
        p = parent[b]
        if p is None:
            continue
        depth[b] = depth[p] + 1
        logs.write(p, t0 + (depth[b] - 1) * hop + hop // 10, ev_out, sub_id=sid, link=b)
        logs.write(b, t0 + depth[b] * hop, ev_in, sub_id=sid, link=p)


def _route(
    logs: _Logs,
    adj: dict[str, list[str]],
    host: str,
    pid: str,
    t0: int,
    hop: int,
    extra: int,
    matching: list[dict[str, Any]],
    flooding: bool,
    table: int,
) -> None:
    parent = _tree_paths(adj, host)
    interested = {s["broker"] for s in matching}
    needed: set[str] = set()
    for b in interested:
        x: str | None = b
        while x is not None and x not in needed:
            needed.add(x)
            x = parent[x]
    reach = parent.keys() if flooding else needed | {host}
    step = hop + extra // 4
    depth: dict[str, int] = {}
    for b in parent:
        p = parent[b]
        if b not in reach:
            continue
        depth[b] = 0 if p is None else depth[p] + 1
        arrive = t0 + depth[b] * step
        logs.write(b, arrive, contract.NOTIF_IN, pub_id=pid, link=p or "", hops=depth[b])
        local = [s for s in matching if s["broker"] == b]
        logs.write(b, arrive + 20_000, contract.MATCH, pub_id=pid, us=20.0 + table * 0.1, n=len(local))
        for s in local:
            logs.write(b, arrive + 30_000, contract.DELIVER, pub_id=pid, sub_id=s["sub_id"])
            logs.write(
                s["worker"],
                arrive + 30_000 + extra + 100_000,
                contract.RECEIVE,
                pub_id=pid,
                sub_id=s["sub_id"],
                hops=depth[b],
            )
        for c in adj[b]:
            if parent.get(c) == b and c in reach:
                logs.write(
                    b,
                    arrive + 40_000,
                    contract.NOTIF_OUT,
                    pub_id=pid,
                    link=c,
                    hops=depth[b] + 1,
                    dynamic=False,
                )


def _sample_loop(logs: _Logs, brokers: list[str], ts: int, spec: SynthSpec) -> None:
    probes = [(brokers, contract.LOOP, spec.loop_lag_ms, spec.loop_cpu)]
    processes = [f"worker-{k}" for k in range(spec.worker_processes)] + ["pubworker-0", "pubworker-1"]
    probes.append((processes, contract.CLIENT_LOOP, spec.client_lag_ms, spec.client_cpu))
    for nodes, ev, lag, cpu in probes:
        if lag is None:
            continue
        for node in nodes:
            logs.write(node, ts, ev, lag_ms_max=2 * lag, lag_ms_mean=lag, probes=2, cpu=cpu, wall_ms=250.0)


def _sample_queues(logs: _Logs, adj: dict[str, list[str]], ts: int, extra: int, rng: random.Random) -> None:
    level = extra // (5 * MS)
    for b, ns in adj.items():
        logs.write(b, ts, contract.QUEUE, link="", len=level + rng.randrange(3), ce=1.0)
        for c in ns:
            logs.write(b, ts, contract.QUEUE, link=c, len=level // 2 + rng.randrange(2), ce=1.0 + level / 100)
