"""One function per section of ``analysis/summary.json``, and the registry that orders them.

A section function reads the shared :class:`~scotbed.analysis.context.RunData`,
returns its typed section and may add per-metric tables (``data.tables``) and
plot inputs (``data.plot_data``). Adding a section is one function and one
line in :data:`SECTIONS`.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pandas as pd
from pyspark.sql import functions as F

from scotbed import contract
from scotbed.analysis import corrupt_logs, fidelity, links, propagation, pruning, validity
from scotbed.analysis import metrics as M
from scotbed.analysis import summary as S
from scotbed.analysis.context import RunData
from scotbed.analysis.matching_steps import MatchingSteps, steps_by_hops
from scotbed.analysis.stats import time_to_stabilise
from scotbed.selforg.analysis.section import selforg_section
from scotbed.vinifera.analysis.section import peers_section


def events_section(d: RunData) -> S.Events:
    total, lines = d.line_counts
    return S.Events(total, lines - total, len(d.run.event_files()), d.unreadable[1])


def subscriptions_section(d: RunData) -> S.Subscriptions:
    t = d.sub_table
    subs = t[t["in_table"]][M.SUBSCRIPTION_COLUMNS].reset_index(drop=True)
    subs = M.stored_at_first_wave(subs, propagation.wave_ends(d.sub_traffic))
    d.tables["subscriptions"] = subs
    ims = int(subs["ims"].sum()) if len(subs) else 0
    return S.Subscriptions(
        count=len(subs),
        ims_total=ims,
        ims_per_subscription=ims / len(subs) if len(subs) else 0.0,
        unsub_ims_total=M.unsubscription_ims(d.node_facts),
        delay_ms=M.local_distribution(subs["delay_ms"]),
    )


def correctness_section(d: RunData) -> S.Correctness:
    """The oracle's verdict; not ok, whatever the oracle found, when a broker log lost lines
    (:mod:`scotbed.analysis.corrupt_logs`): ``malformed_broker_lines`` and a ``reason`` naming them."""
    o, corrupt = d.oracle, d.corrupt_broker_logs
    lost = {"malformed_broker_lines": sum(corrupt.values())} if corrupt else {}
    why = corrupt_logs.reason(corrupt) if corrupt else None
    if o is None:
        reason = f"{contract.SUBSCRIPTIONS} or {contract.PUBLICATIONS} missing"
        return S.Correctness(None, d.engine, d.settle_ms, lost, reason="; ".join(filter(None, (reason, why))))
    first = {k: v for k, v in o.result.items() if k.startswith("first_")}
    counts = {k: v for k, v in o.result.items() if k != "ok" and k not in first}
    ok = o.result["ok"] and not corrupt
    return S.Correctness(ok, d.engine, d.settle_ms, {**counts, **lost}, first, why)


def notifications_section(d: RunData) -> S.Notifications:
    c = correctness_section(d)
    drain = drain_section(d)
    dists, curves = d.delays
    hops = d.hops
    nims = M.notification_ims(d.node_facts)
    n_deliv = int(hops["count"].sum()) if len(hops) else 0
    p99, match = d.matching
    d.tables["hops"] = hops
    d.tables["matching"] = nims.merge(M.matching_per_broker(d.node_facts, p99), on="node", how="outer")
    d.tables["delay_cdf"] = pd.DataFrame(
        [(label, q, v) for label, col in CDF_SERIES for q, v in curves[col]],
        columns=["series", "quantile", "delay_ms"],
    )
    d.plot_data["cdf"] = {label: curves[col] for label, col in CDF_SERIES}
    return S.Notifications(
        published=d.published[0],
        expected_deliveries=c.count("expected_deliveries"),
        delivered=c.counts["delivered"] if "delivered" in c.counts else d.deliveries.count(),
        missing=c.count("missing") - drain.undelivered_at_stop,
        duplicates=c.count("duplicates"),
        false_positives=c.count("false_positives"),
        in_transition=c.count("in_transition"),
        ims_total=int(nims["ims"].sum()) if len(nims) else 0,
        dynamic_copies=int(nims["dynamic"].sum()) if len(nims) else 0,
        delay_ms={**dists["delay_ms"], "excludes": drain.delay_excludes},
        send_delay_ms=dists["send_delay_ms"],
        matching_us={"mean": match["mean"], "p99": match["p99"], "max": match["max"]},
        hops={
            "mean": float((hops["hops"] * hops["count"]).sum() / n_deliv) if n_deliv else 0.0,
            "max": int(hops["hops"].max()) if n_deliv else 0,
        },
        undelivered_at_stop=drain.undelivered_at_stop,
    )


def drain_section(d: RunData) -> S.Drain:
    """The drain record read back; the deliveries it keeps from ``missing`` when the deadline cut it."""
    path = d.run.path / contract.DRAIN
    record = json.loads(path.read_text()) if path.exists() else None
    return S.drain_of(record, d.oracle.result["missing"] if d.oracle is not None else 0)


CDF_SERIES = contract.DELAY_CDF_SERIES


def stability_section(d: RunData) -> S.Stability:
    window = d.run.stability_window
    rows = d.receives
    curve = M.stability_curve(d.deliveries, window) if rows is None else M.stability_windows(rows, window)
    burst = d.pub_stats.burst
    n_published, first = d.published
    if burst is None and n_published and first is not None:
        burst = M.burst_from_spec(d.run.spec, first)
    recovery = time_to_stabilise(curve.to_dict("records"), *burst).to_json() if burst else None
    d.tables["stability"] = curve
    d.plot_data["stability"] = (curve, window, burst, recovery)
    return S.Stability(
        window=window,
        windows=len(curve),
        max_window_delay_ms=float(curve["max_delay_ms"].max()) if len(curve) else 0.0,
        burst={"start_ns": burst[0], "end_ns": burst[1]} if burst else None,
        recovery=recovery,
    )


def queues_section(d: RunData) -> S.Queues:
    d.tables["queues"] = d.series[0]
    pubs = d.publications
    hrp = None
    if d.run.spec.workload.hrp is not None and pubs is not None:
        hrp = M.hrp_target_queue_mean(d.events, pubs)
    return S.Queues(**M.queue_maxima(d.node_facts), hrp_target_mean_len=hrp)


def tables_section(d: RunData) -> S.Tables:
    sizes = M.table_sizes(d.node_facts)
    d.tables["table_series"] = d.series[1]
    d.tables["table_sizes"] = sizes
    return S.Tables(
        max_size=int(sizes["max_size"].max()) if len(sizes) else 0,
        mean_final_size=float(sizes["final_size"].mean()) if len(sizes) else 0.0,
    )


def traffic_section(d: RunData) -> S.Traffic:
    if d.traffic is None:
        return S.Traffic()
    relay, fp = d.traffic
    d.tables["relay"] = relay
    d.tables["false_positive_traffic"] = fp
    visits, relay_only = int(relay["visits"].sum()), int(relay["relay_only"].sum())
    fwd, fpi = int(fp["ims"].sum()), int(fp["fp_ims"].sum())
    return S.Traffic(
        {
            "broker_visits": visits,
            "relay_only": relay_only,
            "relay_only_fraction": relay_only / visits if visits else 0.0,
            "forwarded": fwd,
            "false_positive": fpi,
            "false_positive_fraction": fpi / fwd if fwd else 0.0,
        }
    )


def links_section(d: RunData) -> S.Links:
    """Per-link accounting; a scripted run's per-line tables go to the report (``plot_data``)."""
    sent = d.node_facts.groupby("ev")["to_broker"].sum()
    section, script_tables = links.analyse(d.events, d.pub_times, d.run, sent.to_dict(), d.written)
    d.plot_data["script_tables"] = script_tables
    return section


def workload_section(d: RunData) -> S.Workload:
    pubs = d.pub_arrow
    return fidelity.workload_block(d.run, None if pubs is None else pubs.attrs)


def load_section(d: RunData) -> S.Load:
    load = M.load_per_broker(d.node_facts, d.run.broker_ids())
    d.tables["load"] = load
    return S.Load(**M.load_balance(load))


def drops_section(d: RunData) -> S.Drops:
    return S.Drops(M.drops(d.node_facts))


def pruning_section(d: RunData) -> S.Pruning:
    """Selective pruning's burst metrics, on a tiered run that unsubscribed (:mod:`.pruning`)."""
    core = pruning.core_brokers(d.run.topology)
    since = pruning.first_unsubscribe_ns(d.sub_table) if core else None
    if since is None:
        return S.Pruning()
    released = pruning.released_per_broker(d.events, since)
    queues = pruning.core_queue_series(d.events, core, since)
    d.tables["released_subscriptions"] = released
    d.tables["core_queues"] = queues
    sizes = M.table_sizes(d.node_facts)
    probe = pruning.probe_delay(d.deliveries)
    fp = None if d.traffic is None else d.traffic[1]
    inner = pruning.inner_brokers(d.run.topology)
    return S.Pruning(pruning.block(released, queues, sizes, core, probe, fp, inner))


def matching_steps_section(d: RunData) -> MatchingSteps:
    """PST steps per match by hop count, when the engine logs them (:mod:`.matching_steps`)."""
    facts = d.node_facts
    if not facts.loc[facts["ev"] == contract.MATCH, "with_steps"].sum():
        return MatchingSteps()  # no match logged its steps: nothing to join
    return steps_by_hops(d.events)


def validity_section(d: RunData) -> validity.Validity:
    """Host-bound or valid (:mod:`scotbed.analysis.validity`), from the ``loop`` events, the publication
    times (window, send lag) and the measured delays; the loop-lag series goes to the report."""
    cols = ("node", "ts_ns", "lag_ms_max", "lag_ms_mean", "cpu", "wall_ms", "wait_ms", "ev")
    rows = M.of(d.events, contract.LOOP, contract.CLIENT_LOOP).select(*cols)
    rows_by_ev: dict[str, list[validity.LoopSample]] = {contract.LOOP: [], contract.CLIENT_LOOP: []}
    for r in rows.where(F.col("lag_ms_max").isNotNull()).collect():
        rows_by_ev[r[7]].append(
            validity.LoopSample(
                r[0], int(r[1]), float(r[2]), float(r[3] or 0), float(r[4] or 0), float(r[5] or 0), r[6]
            )
        )
    samples, clients = rows_by_ev[contract.LOOP], rows_by_ev[contract.CLIENT_LOOP]
    p = d.pub_stats
    window = None
    if p.first_ns is not None and p.last_ns is not None:
        end = d.last_receive_ns if d.last_receive_ns is not None else p.last_ns
        window = validity.Window(p.first_ns, p.last_ns, max(end, p.last_ns))
    n_deliv = int(d.hops["count"].sum()) if len(d.hops) else 0
    hops = float((d.hops["hops"] * d.hops["count"]).sum() / n_deliv) if n_deliv else 0.0
    delay = validity.Delay(d.delays[0]["delay_ms"].get("mean"), hops, p.send_lag_ms)
    spec = d.run.spec
    cores = validity.cores_of(spec, d.run.provenance)
    if spec.backend == contract.SIM_BACKEND:
        v = validity.virtual(window, delay, spec.workload.time_scale, spec.analysis.host_bound)
    else:
        v = validity.assess(
            samples, window, delay, cores, spec.workload.time_scale, spec.analysis.host_bound, clients
        )
    origin = window.start_ns if window else min((s.ts_ns for s in samples), default=0)
    d.tables["loop_lag"] = pd.DataFrame(
        validity.lag_series(samples, origin), columns=["t_s", "lag_ms_max", "lag_ms_mean", "cpu_sum"]
    )
    d.plot_data["loop_lag"] = (d.tables["loop_lag"], v)
    return v


# The sections of summary.json, in file order.
SECTIONS: tuple[tuple[str, Callable[[RunData], S.Section]], ...] = (
    ("events", events_section),
    ("subscriptions", subscriptions_section),
    ("notifications", notifications_section),
    ("stability", stability_section),
    ("queues", queues_section),
    ("tables", tables_section),
    ("traffic", traffic_section),
    ("links", links_section),
    ("workload", workload_section),
    ("load", load_section),
    ("drops", drops_section),
    ("pruning", pruning_section),
    ("matching_steps", matching_steps_section),
    ("drain", drain_section),
    ("correctness", correctness_section),
    ("validity", validity_section),
    ("selforg", selforg_section),
    ("peers", peers_section),
)
