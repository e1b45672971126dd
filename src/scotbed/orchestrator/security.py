"""``security: {tls: true}``: issue the run's certificates and switch every channel of the run to TLS.

The certificates go to ``<run dir>/tls/`` (:mod:`scotbed.orchestrator.pki`);
:data:`scotbed.broker.tls.ENV_DIR` names that directory for the orchestrator
and, inherited, for every broker and Locust process it starts; compose mounts
the directory into every broker container and names it there
(:func:`scotbed.orchestrator.backends.compose.render_run`); k8s ships it as a
Secret that every broker and workload pod mounts
(:mod:`scotbed.orchestrator.backends.k8s.render_tls`). With or without TLS, every run draws a run token
that its Admin and Link callers must show (:func:`with_run_token`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scotbed.broker import runtoken, tls
from scotbed.config import BrokerConfig
from scotbed.experiment import spec_peers
from scotbed.orchestrator import pki

TLS_DIR = "tls"


def validate(spec: Any) -> None:
    """Every backend runs TLS; the peer processes do not."""
    from scotbed.experiment.spec import SpecError

    if not spec.security.tls:
        return
    if spec.topology.kind == spec_peers.PEERS:
        raise SpecError("security.tls: the peer-process overlays (topology.kind: peers) speak plaintext only")


def _host(address: str) -> str:
    return address.rsplit(":", 1)[0].strip("[]")


def hosts(configs: Sequence[BrokerConfig]) -> dict[str, list[str]]:
    """Every broker's names: the host it listens on and every host its neighbours dial it by."""
    out: dict[str, list[str]] = {c.id: [_host(c.listen)] for c in configs}
    for c in configs:
        for n in c.neighbours:
            out.setdefault(n.id, []).append(_host(n.address))
    return {b: [h for h in hs if h not in ("", "0.0.0.0", "::")] for b, hs in out.items()}


def enable(spec: Any, run_dir: Path, configs: Sequence[BrokerConfig], run_id: str) -> Path | None:
    """Issue the certificates and point this process (and its children) at them; None when off."""
    if not spec.security.tls:
        return None
    directory = run_dir / TLS_DIR
    pki.issue(directory, {b: [*hs, *pki.LOCAL_HOSTS] for b, hs in hosts(configs).items()}, run_id)
    os.environ[tls.ENV_DIR] = str(directory)
    return directory


def with_run_token(configs: Sequence[BrokerConfig]) -> list[BrokerConfig]:
    """The configs with a fresh run token (:mod:`scotbed.broker.runtoken`), which this process and its
    children show on every Admin and Link call from now on."""
    token = runtoken.new()
    os.environ[runtoken.ENV] = token
    return [dataclasses.replace(c, run_token=token) for c in configs]


def disable() -> None:
    os.environ.pop(tls.ENV_DIR, None)
    os.environ.pop(runtoken.ENV, None)
