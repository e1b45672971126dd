"""The spec side of scripted scenarios (``workload: {script: FILE}``, docs/design.md §8).

A script is read relative to the spec file and checked against the overlay
(broker ids) while the spec is validated, so a bad line is a spec error
(exit 2) before anything deploys. The run plays it from the orchestrator's
host over the addresses the deployment exposes to the host (the admin
addresses: local processes, compose's published ports, Kubernetes
port-forwards; a broker serves clients and Admin on one port).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scotbed import topology as topo
from scotbed.experiment.spec_errors import SpecError
from scotbed.loader import read_text
from scotbed.workloads.script import Script, ScriptError, parse

if TYPE_CHECKING:
    from scotbed.experiment.spec import Spec

KEY = "workload.script"


def load_script(spec: Spec, scot: topo.Scot) -> Script:
    """The spec's script, checked against ``scot``; a :class:`SpecError` names the file and line."""
    name = spec.workload.script
    if name is None:
        raise SpecError(f"{KEY}: the spec has no script")
    try:
        text = read_text((spec.base_dir / name).resolve(), "script", ScriptError)
        return parse(text, [b.id for b in scot.brokers], source=name)
    except ScriptError as e:
        raise SpecError(f"{KEY}: {e}") from None
