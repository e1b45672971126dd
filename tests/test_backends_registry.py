"""The backend registry: every name loads its class with the capabilities it declares, and the commands
that take a backend name go through it (render's targets, down's sweeps, the fault check)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scotbed_cli import QUICKSTART, scotbed

from scotbed.orchestrator import down as down_mod
from scotbed.orchestrator.backends import REGISTRY, backend_class, rendering
from scotbed.orchestrator.backends.base import BackendError
from scotbed.orchestrator.state import RunState


def test_every_registered_backend_loads_with_its_name_and_capabilities() -> None:
    for name in REGISTRY:
        cls = backend_class(name)
        assert cls.name == name
        flags = (cls.supports_faults, cls.renders, cls.sweeps_unasked, cls.virtual_time)
        assert {type(f) for f in flags} == {bool}
    assert rendering() == ["compose", "k8s"]
    assert [n for n in REGISTRY if backend_class(n).sweeps_unasked] == ["compose"]
    assert [n for n in REGISTRY if backend_class(n).virtual_time] == ["sim"]
    with pytest.raises(ValueError, match="unknown backend 'kind'; allowed: local, compose, k8s, sim"):
        backend_class("kind")


def test_a_backend_that_deploys_nothing_renders_nothing(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="local backend deploys nothing"):
        backend_class("local").render(None, None, None, "r", tmp_path)
    out = scotbed(tmp_path, "render", str(QUICKSTART), "--target", "local", "--out", str(tmp_path / "o"))
    assert out.returncode == 2
    assert "--target: local deploys nothing to render; choose compose or k8s" in out.stderr


def test_down_has_each_run_removed_by_its_backend_and_sweeps_only_those_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOTBED_STATE_DIR", str(tmp_path / "state"))
    calls: list[Any] = []
    note = calls.append
    compose, k8s = backend_class("compose"), backend_class("k8s")
    monkeypatch.setattr(compose, "down_run", classmethod(lambda cls, st: note(("c", st.run_id)) or []))
    monkeypatch.setattr(k8s, "down_run", classmethod(lambda cls, st: [f"namespace ns-{st.run_id}: deleted"]))
    monkeypatch.setattr(compose, "sweep", classmethod(lambda cls, run_id: ["compose project p: down -v"]))
    monkeypatch.setattr(k8s, "sweep", classmethod(lambda cls, run_id: ["namespace ns-k: deleted"]))
    RunState("k", "k8s", str(tmp_path)).save()
    RunState("c", "compose", str(tmp_path)).save()
    report = down_mod.down()
    assert sorted(report.runs) == ["c", "k"] and calls == [("c", "c")]
    assert report.removed == ["namespace ns-k: deleted", "compose project p: down -v"]
    assert down_mod.down(backend="k8s").removed == ["namespace ns-k: deleted"]
