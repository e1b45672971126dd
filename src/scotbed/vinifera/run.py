"""A run of ``topology: {kind: peers}``: peer processes where the backend's launcher starts them
(:meth:`~scotbed.orchestrator.backends.base.Backend.peer_launcher`: this host, containers, pods),
the gossip warm-up, then the publish phase in rounds (events from live peers, optional churn), the
event logs analysed by Spark (:mod:`scotbed.vinifera.analysis.section`) into
``analysis/summary.json`` and a small report (:mod:`scotbed.vinifera.analysis.report`).

The workload is the simulator's (:mod:`scotbed.vinifera.workload`): one subscription per peer, uniform
or Zipf-skewed; the driver paces the rounds (:class:`scotbed.vinifera.process.cluster.PeerCluster`).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.experiment.spec import Spec
from scotbed.experiment.spec_peers import PeersWorkloadSpec, peer_config
from scotbed.orchestrator.progress import Progress
from scotbed.vinifera.analysis import report as peer_analysis
from scotbed.vinifera.analysis import section as peers_section
from scotbed.vinifera.process.cluster import PeerCluster
from scotbed.vinifera.process.launch import Launcher
from scotbed.vinifera.workload import Draw, Shape, distinct_ids

#: bootstrap contacts per joining peer (the simulator's ``grow`` default)
CONTACTS = 5


def run_peers(
    spec: Spec, run_dir: Path, progress: Progress, launcher: Launcher | None = None
) -> tuple[dict[str, Any], bool, str]:
    """Run the peers; returns the summary, whether the oracle holds, and the verdict line."""
    cfg = peer_config(spec)
    w = spec.workload.peers or PeersWorkloadSpec()
    assert spec.topology.peers is not None
    n = spec.topology.peers.n
    rng = random.Random(spec.seed)
    subs = Draw(cfg, Shape(kind=w.subscriptions, width=w.width), rng)
    events = Draw(cfg, Shape(kind=w.events, width=w.width), random.Random(spec.seed + 1))
    ids = distinct_ids(n, cfg.id_space, rng)
    peers = {k: (ids[k], subs.subscription()) for k in range(n)}
    failed: dict[int, int] = {}
    with progress.phase("deploy") as ph:
        ph.update(f"starting {n} peer processes ({spec.routing})")
        cluster = PeerCluster(
            run_dir,
            peers,
            cfg,
            spec.routing,
            seed=spec.seed,
            ready_timeout_s=spec.timeouts.ready_s,
            launcher=launcher,
            capacity=w.capacity,
        )
    with cluster:
        cluster.bootstrap({k: rng.sample(range(k), min(CONTACTS, k)) for k in range(1, n)})
        with progress.phase("warm-up") as ph:
            for _ in range(w.warmup_rounds):
                cluster.round()
            ph.update(f"{w.warmup_rounds} gossip rounds")
        with progress.phase("publish") as ph:
            for r in range(w.rounds):
                if w.churn is not None and r > 0 and r % w.churn.every == 0:
                    live = sorted(set(peers) - set(failed))
                    for k in rng.sample(live, min(w.churn.leaves, len(live) - 2)):
                        cluster.kill(k)
                        failed[k] = cluster.now + 1  # the first round it misses
                live = sorted(set(peers) - set(failed))
                cluster.round([(rng.choice(live), events.event()) for _ in range(w.events_per_round)])
            ph.update(f"{w.rounds * w.events_per_round} events in {w.rounds} rounds, {len(failed)} failures")
        cluster.flush()
    with (run_dir / contract.FAULTS).open("w") as fh:
        for k, r in sorted(failed.items()):
            fh.write(json.dumps({"round": r, "kind": "kill", "peer": contract.peer_node(k)}) + "\n")
    with progress.phase("analyse") as ph:
        ph.update("Spark")
        figures, plots = peers_section.analyse(run_dir)
    ok, verdict = peer_analysis.verdict(figures, churn=bool(failed))
    summary = {
        "peers": figures,
        "correctness": peer_analysis.correctness(figures, churn=bool(failed)),
        "routing": spec.routing,
        "failed": len(failed),
        "verdict": verdict,
    }
    (run_dir / contract.SUMMARY).write_text(json.dumps(summary, indent=1))
    (run_dir / contract.REPORT).write_text(peer_analysis.report_html(spec.name, spec.routing, figures, plots))
    return summary, ok, verdict
