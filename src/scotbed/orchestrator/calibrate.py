"""``scotbed calibrate``: run a spec on broker processes (local backend, no analysis), measure from
each run's event logs what a broker process adds to the time model (:mod:`.backends.sim.calibration`)
and keep the median of the runs.

The file it writes names the runs, the host, its cores and each run's load average before and after, so a
sim run that uses it (its provenance records the calibration) says which host its delays stand for.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scotbed import contract
from scotbed.broker.eventlog import read_events
from scotbed.experiment.spec import build_scot, load_spec
from scotbed.orchestrator.backends.sim import calibration
from scotbed.orchestrator.backends.sim.calibration import DEFAULT_REPETITIONS, HostCost
from scotbed.orchestrator.plan import broker_configs
from scotbed.orchestrator.progress import make_progress
from scotbed.orchestrator.run import RunFailed, RunOptions, run_spec


def calibrate(
    spec_path: Path, sets: list[str], runs: Path, quiet: bool = True, repetitions: int = DEFAULT_REPETITIONS
) -> HostCost:
    """Run the spec ``repetitions`` times on local broker processes and take the median of what they
    cost over the time model (this host's speed moves from one second to the next, so one run can
    stand for a slower or a faster host than the runs the calibration is used for)."""
    spec = load_spec(spec_path, sets)
    scot = build_scot(spec)
    configs = broker_configs(spec, scot, {b.id: f"{b.id}:1" for b in scot.brokers})
    service = {c.id: c.service_us for c in configs}
    latency = {(c.id, n.id): n.latency_ms for c in configs for n in c.neighbours}
    costs = [_one_run(spec_path, sets, runs, quiet, service, latency) for _ in range(repetitions)]
    cost = calibration.median(costs)
    on = {
        "spec": str(spec_path),
        "sets": sets,
        "host": socket.gethostname(),
        "cores": os.cpu_count(),
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **(cost.measured_on or {}),
    }
    return HostCost(cost.client_in_us, cost.hop_us, cost.client_out_us, measured_on=on)


def _one_run(
    spec_path: Path,
    sets: list[str],
    runs: Path,
    quiet: bool,
    service: dict[str, float],
    latency: dict[tuple[str, str], float],
) -> HostCost:
    """One run of broker processes and its cost; ``measured_on`` names the run and the load around it."""
    load_before = os.getloadavg()[0]
    result = run_spec(spec_path, sets, RunOptions(backend="local", out=runs, quiet=quiet, analyse=False))
    load_after = os.getloadavg()[0]
    brokers: list[dict[str, Any]] = []
    clients: list[dict[str, Any]] = []
    for path in sorted((result.run_dir / contract.EVENTS_DIR).glob("*.jsonl")):
        into = clients if path.name.startswith(contract.CLIENT_PROCESS_PREFIX) else brokers
        into.extend(read_events(path))
    cost = calibration.measure(brokers, clients, service, latency)
    on = {
        **(cost.measured_on or {}),
        "run_dir": str(result.run_dir),
        "load_1min": [round(load_before, 2), round(load_after, 2)],
    }
    return HostCost(cost.client_in_us, cost.hop_us, cost.client_out_us, measured_on=on)


def main(args: Any) -> int:
    progress = make_progress(args.quiet, args.log_json)
    try:
        cost = calibrate(
            Path(args.spec), args.sets, Path(args.runs), args.quiet or args.log_json, args.repetitions
        )
    except RunFailed as e:
        progress.error(f"scotbed calibrate: the calibration run failed: {e}")
        return 3
    out = Path(args.out)
    calibration.write(cost, out)
    progress.info(
        f"host cost: {cost.client_in_us:.0f} µs per client→broker hop, {cost.hop_us:.0f} µs per "
        f"inter-broker hop, {cost.client_out_us:.0f} µs per delivery to a subscriber (the median of "
        f"{args.repetitions} runs); written to {out}"
    )
    return 0
