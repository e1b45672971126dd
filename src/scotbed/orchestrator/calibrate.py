"""``scotbed calibrate``: run a spec on broker processes (local backend, no analysis) and measure from
its event logs what a broker process adds to the time model (:mod:`.backends.sim.calibration`).

The file it writes names the run, the host, its cores and the load average before and after, so a
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
from scotbed.orchestrator.backends.sim.calibration import HostCost
from scotbed.orchestrator.plan import broker_configs
from scotbed.orchestrator.progress import make_progress
from scotbed.orchestrator.run import RunFailed, RunOptions, run_spec


def calibrate(spec_path: Path, sets: list[str], runs: Path, quiet: bool = True) -> HostCost:
    """Run the spec on local broker processes and measure their cost over the time model."""
    spec = load_spec(spec_path, sets)
    scot = build_scot(spec)
    configs = broker_configs(spec, scot, {b.id: f"{b.id}:1" for b in scot.brokers})
    service = {c.id: c.service_us for c in configs}
    latency = {(c.id, n.id): n.latency_ms for c in configs for n in c.neighbours}
    load_before = os.getloadavg()[0]
    options = RunOptions(backend="local", out=runs, quiet=quiet, analyse=False)
    result = run_spec(spec_path, sets, options)
    load_after = os.getloadavg()[0]
    brokers: list[dict[str, Any]] = []
    clients: list[dict[str, Any]] = []
    for path in sorted((result.run_dir / contract.EVENTS_DIR).glob("*.jsonl")):
        into = clients if path.name.startswith(contract.CLIENT_PROCESS_PREFIX) else brokers
        into.extend(read_events(path))
    cost = calibration.measure(brokers, clients, service, latency)
    on = {
        **(cost.measured_on or {}),
        "spec": str(spec_path),
        "sets": sets,
        "run_dir": str(result.run_dir),
        "host": socket.gethostname(),
        "cores": os.cpu_count(),
        "load_1min": [round(load_before, 2), round(load_after, 2)],
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return HostCost(cost.client_in_us, cost.hop_us, cost.client_out_us, measured_on=on)


def main(args: Any) -> int:
    progress = make_progress(args.quiet, args.log_json)
    try:
        cost = calibrate(Path(args.spec), args.sets, Path(args.runs), quiet=args.quiet or args.log_json)
    except RunFailed as e:
        progress.error(f"scotbed calibrate: the calibration run failed: {e}")
        return 3
    out = Path(args.out)
    calibration.write(cost, out)
    progress.info(
        f"host cost: {cost.client_in_us:.0f} µs per client→broker hop, {cost.hop_us:.0f} µs per "
        f"inter-broker hop, {cost.client_out_us:.0f} µs per delivery to a subscriber; written to {out}"
    )
    return 0
