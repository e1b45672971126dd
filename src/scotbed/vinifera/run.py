"""A run of ``topology: {kind: peers}``: peer processes where the backend's launcher starts them
(:meth:`~scotbed.orchestrator.backends.base.Backend.peer_launcher`: this host, containers, pods), or
the same peers in the round simulator (:class:`~scotbed.vinifera.sim.Simulation`, ``--backend sim``).

Both take the same steps (:func:`drive`): the peers and their seeds, the bootstrap contacts, the
gossip warm-up, then the publish phase in rounds (events from live peers, optional churn). A run of
processes is analysed by Spark from its event logs (:mod:`scotbed.vinifera.analysis.section`); a
simulated run writes no event logs (a 1,000-peer run would log millions of messages) and computes
the same ``peers`` block from the simulator's per-event records (:func:`scotbed.vinifera.metrics.summary`,
the definitions the Spark section implements). Either writes ``analysis/summary.json`` and a small
report (:mod:`scotbed.vinifera.analysis.report`).

The workload is the simulator's (:mod:`scotbed.vinifera.workload`): one subscription per peer, uniform
or Zipf-skewed; the driver paces the rounds.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from scotbed import contract
from scotbed.experiment.spec import Spec
from scotbed.experiment.spec_peers import PeersWorkloadSpec, peer_config
from scotbed.orchestrator.progress import Progress
from scotbed.routing import peer_class
from scotbed.vinifera import metrics
from scotbed.vinifera.analysis import report as peer_analysis
from scotbed.vinifera.analysis import section as peers_section
from scotbed.vinifera.config import PeerConfig
from scotbed.vinifera.interest import Event, Subscription
from scotbed.vinifera.messages import Desc
from scotbed.vinifera.peer import peer_rng
from scotbed.vinifera.process.cluster import PeerCluster
from scotbed.vinifera.process.launch import Launcher
from scotbed.vinifera.sim import Simulation
from scotbed.vinifera.workload import Draw, Shape, distinct_ids

#: bootstrap contacts per joining peer (the simulator's ``grow`` default)
CONTACTS = 5

PeerTable = dict[int, tuple[int, Subscription | None]]  # name -> (ring id, subscription)


class Peers(Protocol):
    """What :func:`drive` steps: peer processes (:class:`PeerCluster`) or :class:`SimulatedPeers`."""

    @property
    def now(self) -> int: ...

    def bootstrap(self, contacts: Mapping[int, Iterable[int]]) -> None: ...

    def round(self, publications: Sequence[tuple[int, Event]] = ()) -> list[int]: ...

    def kill(self, name: int) -> None: ...


class SimulatedPeers:
    """The peers of a run in the round simulator, built as the peer processes build themselves: the
    same names, ids, subscriptions and random streams (:func:`~scotbed.vinifera.peer.peer_rng`), and
    bootstrapped from the same contacts' first descriptors."""

    def __init__(self, peers: PeerTable, cfg: PeerConfig, routing: str, seed: int, capacity: int | None):
        self.sim = Simulation(cfg, capacity=capacity, seed=seed)
        make = peer_class(routing)
        for name, (ident, sub) in peers.items():
            self.sim.add(make(name, ident, sub, cfg, peer_rng(seed, name)))
        self.descs = {name: Desc(name, ident, 0, sub) for name, (ident, sub) in peers.items()}

    @property
    def now(self) -> int:
        return self.sim.now

    def bootstrap(self, contacts: Mapping[int, Iterable[int]]) -> None:
        for name, cs in contacts.items():
            self.sim.peers[name].bootstrap([self.descs[c] for c in cs])

    def round(self, publications: Sequence[tuple[int, Event]] = ()) -> list[int]:
        return self.sim.round(publications)

    def kill(self, name: int) -> None:
        self.sim.fail(name)


def peer_table(spec: Spec, cfg: PeerConfig, rng: random.Random) -> PeerTable:
    """The run's peers: distinct ids and one subscription each, drawn from the spec's seed."""
    w = spec.workload.peers or PeersWorkloadSpec()
    assert spec.topology.peers is not None
    n = spec.topology.peers.n
    subs = Draw(cfg, Shape(kind=w.subscriptions, width=w.width), rng)
    ids = distinct_ids(n, cfg.id_space, rng)
    return {k: (ids[k], subs.subscription()) for k in range(n)}


def drive(
    spec: Spec, cfg: PeerConfig, peers: Peers, rng: random.Random, progress: Progress
) -> dict[int, int]:
    """Bootstrap, warm up and publish (the run's steps, one home for processes and simulator);
    returns the failed peers: name -> the first round each missed."""
    w = spec.workload.peers or PeersWorkloadSpec()
    assert spec.topology.peers is not None
    n = spec.topology.peers.n
    events = Draw(cfg, Shape(kind=w.events, width=w.width), random.Random(spec.seed + 1))
    failed: dict[int, int] = {}
    peers.bootstrap({k: rng.sample(range(k), min(CONTACTS, k)) for k in range(1, n)})
    with progress.phase("warm-up") as ph:
        for _ in range(w.warmup_rounds):
            peers.round()
        ph.update(f"{w.warmup_rounds} gossip rounds")
    with progress.phase("publish") as ph:
        for r in range(w.rounds):
            if w.churn is not None and r > 0 and r % w.churn.every == 0:
                live = sorted(set(range(n)) - set(failed))
                for k in rng.sample(live, min(w.churn.leaves, len(live) - 2)):
                    peers.kill(k)
                    failed[k] = peers.now + 1  # the first round it misses
            live = sorted(set(range(n)) - set(failed))
            peers.round([(rng.choice(live), events.event()) for _ in range(w.events_per_round)])
        ph.update(f"{w.rounds * w.events_per_round} events in {w.rounds} rounds, {len(failed)} failures")
    return failed


def run_peers(
    spec: Spec, run_dir: Path, progress: Progress, launcher: Launcher | None = None
) -> tuple[dict[str, Any], bool, str]:
    """Run the peers as processes; returns the summary, whether the oracle holds, and the verdict line."""
    cfg = peer_config(spec)
    w = spec.workload.peers or PeersWorkloadSpec()
    rng = random.Random(spec.seed)
    peers = peer_table(spec, cfg, rng)
    with progress.phase("deploy") as ph:
        ph.update(f"starting {len(peers)} peer processes ({spec.routing})")
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
        failed = drive(spec, cfg, cluster, rng, progress)
        cluster.flush()
    _write_faults(run_dir, failed)
    with progress.phase("analyse") as ph:
        ph.update("Spark")
        figures, plots = peers_section.analyse(run_dir)
    return _finish(spec, run_dir, figures, plots, failed)


def simulate_peers(spec: Spec, run_dir: Path, progress: Progress) -> tuple[dict[str, Any], bool, str]:
    """Run the peers in the round simulator, in this process; returns what :func:`run_peers` returns."""
    cfg = peer_config(spec)
    w = spec.workload.peers or PeersWorkloadSpec()
    rng = random.Random(spec.seed)
    peers = peer_table(spec, cfg, rng)
    with progress.phase("simulate") as ph:
        simulated = SimulatedPeers(peers, cfg, spec.routing, spec.seed, w.capacity)
        ph.update(f"{len(peers)} peers in the round simulator ({spec.routing})")
    failed = drive(spec, cfg, simulated, rng, progress)
    _write_faults(run_dir, failed)
    with progress.phase("analyse") as ph:
        records = [simulated.sim.records[e] for e in sorted(simulated.sim.records)]
        figures = metrics.summary(records, peers)
        plots = _plots(run_dir, records, peers)
        ph.update(f"{len(records)} events from the simulator's records")
    return _finish(spec, run_dir, figures, plots, failed)


def _plots(run_dir: Path, records: Sequence[metrics.EventRecord], peers: Iterable[int]) -> dict[str, Path]:
    """The tables and plots of :data:`~scotbed.vinifera.analysis.section.PLOTS` from the records."""
    from scotbed.vinifera.analysis import plots

    analysis, out = run_dir / contract.ANALYSIS_DIR, run_dir / contract.PLOTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    tables = {
        "peer_load": pd.DataFrame(sorted(metrics.loads(records, peers).items()), columns=["peer", "load"]),
        "peer_hit_ratio": pd.DataFrame(
            sorted(metrics.hit_ratio_by_round(records).items()), columns=["round", "hit_ratio"]
        ),
    }
    for name, df in tables.items():
        df.to_parquet(analysis / f"{name}.parquet", index=False)
    return {
        title: getattr(plots, plot)(tables[t], out / f) for title, (f, t, plot) in peers_section.PLOTS.items()
    }


def _write_faults(run_dir: Path, failed: Mapping[int, int]) -> None:
    with (run_dir / contract.FAULTS).open("w") as fh:
        for k, r in sorted(failed.items()):
            fh.write(json.dumps({"round": r, "kind": "kill", "peer": contract.peer_node(k)}) + "\n")


def _finish(
    spec: Spec, run_dir: Path, figures: dict[str, Any], plots: Mapping[str, Path], failed: Mapping[int, int]
) -> tuple[dict[str, Any], bool, str]:
    """The verdict, summary.json and report.html of a peers run."""
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
