"""A broker process chooses gRPC's I/O engine before gRPC loads (it reads the choice only then)."""

from __future__ import annotations

import os
import subprocess
import sys

from scotbed.broker.engine import ENV, WITHOUT_EVENT_ENGINE

PROBE = """
import importlib.abc, os, sys

class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "grpc":
            print("GRPC_LOADS_WITH", os.environ.get("{env}", "<unset>"))
            sys.meta_path.remove(self)
        return None

sys.meta_path.insert(0, Watch())
import scotbed.broker.__main__
"""


def _env_when_grpc_loads(env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(env=ENV)], env=env, capture_output=True, text=True, check=True
    ).stdout
    (line,) = [x for x in out.splitlines() if x.startswith("GRPC_LOADS_WITH")]
    return line.split(" ", 1)[1]


def test_the_broker_entry_point_sets_the_engine_before_grpc_loads() -> None:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    assert _env_when_grpc_loads(env) == WITHOUT_EVENT_ENGINE


def test_an_engine_the_environment_names_wins() -> None:
    env = {**os.environ, ENV: "-event_engine_dns"}
    assert _env_when_grpc_loads(env) == "-event_engine_dns"
