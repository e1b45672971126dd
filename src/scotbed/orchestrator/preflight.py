"""Every check an experiment passes before anything of it starts, in one place.

`scotbed validate` and `scotbed run` (and through it `campaign`, `saturate` and `reproduce`) call
:func:`check`, so validate refuses exactly the specs that run refuses before deploying: the schema
and semantics of the spec (:func:`~scotbed.experiment.spec.load_spec`), TLS against the overlay,
the fault timeline against the overlay and the backend, every broker's configuration, and the
workload (a script, or the generated subscriptions and publications).
"""

from __future__ import annotations

from dataclasses import dataclass

from scotbed import topology as topo
from scotbed.experiment import spec_peers
from scotbed.experiment.spec import Spec, build_scot
from scotbed.experiment.spec_errors import SpecError
from scotbed.orchestrator import faults, security
from scotbed.orchestrator.backends import backend_class
from scotbed.orchestrator.plan import broker_configs, client_plan, workload_plan


@dataclass(frozen=True)
class Checked:
    """A spec that passed :func:`check`, with what the checks built."""

    spec: Spec
    backend: str
    scot: topo.Scot | None  # None: a peers overlay (Vinifera) has no broker overlay
    workload: str  # the workload in words, for `scotbed validate`


def check(spec: Spec, backend: str | None = None, with_workload: bool = True) -> Checked:
    """Raise :class:`~scotbed.experiment.spec.SpecError` for anything that would stop ``spec`` on
    ``backend`` (default: the spec's) before its brokers start. ``with_workload=False`` leaves the
    workload's generation to the caller that generates it anyway (`run`'s render phase)."""
    name = backend or spec.backend
    if (why := backend_class(name).refuses(spec)) is not None:
        raise SpecError(f"backend: the {name} backend {why}")
    peers = spec.topology.peers
    if peers is not None and peers.n > (most := backend_class(name).max_peers):
        more = "" if backend_class(name).virtual_time else "; more run in the simulator: --backend sim"
        raise SpecError(f"topology.n: {peers.n} peers; the {name} backend runs at most {most}{more}")
    security.validate(spec)
    if spec.topology.kind == spec_peers.PEERS:
        w = spec.workload.peers or spec_peers.PeersWorkloadSpec()
        return Checked(spec, name, None, f"{w.subscriptions} subscriptions, {w.events} events")
    scot = build_scot(spec)
    faults.validate(spec, scot, name)
    placeholder = {b.id: f"{b.id}:1" for b in scot.brokers}  # exercises every per-broker check
    broker_configs(spec, scot, placeholder)
    if not with_workload:
        return Checked(spec, name, scot, "")
    if spec.workload.script is not None:
        from scotbed.orchestrator.scripted import load_script

        return Checked(spec, name, scot, str(load_script(spec, scot).summary()))
    plan = client_plan(spec, scot)
    workload_plan(spec, scot, placeholder)  # generates the subscriptions: catches what only data shows
    hrp = ", 1 HRP" if plan.hrp else ""
    return Checked(
        spec, name, scot, f"{len(plan.subscribers)} subscribers, {len(plan.publishers)} publishers{hrp}"
    )
