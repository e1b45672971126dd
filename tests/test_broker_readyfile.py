"""The broker's ready file (the exec readiness probe on Kubernetes before 1.24): a real broker process
on loopback keeps it exactly while its gRPC health service says SERVING."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from scotbed.broker.fleet import health


def _health(address: str) -> tuple[bool, str]:
    async def ask() -> tuple[bool, str]:
        async with grpc.aio.insecure_channel(address) as channel:
            return await health(channel)

    return asyncio.run(ask())


@pytest.mark.slow
def test_ready_file_appears_when_serving_and_goes_on_drain(tmp_path: Path) -> None:
    cfg = {"id": "b-a-0", "vertex": "a", "index": 0, "type": "edge", "listen": "127.0.0.1:0"}
    (tmp_path / "broker.json").write_text(json.dumps(cfg))
    ready = tmp_path / "ready"
    ready.write_text("left by an earlier start\n")
    argv = [sys.executable, "-m", "scotbed.broker", "--config", str(tmp_path / "broker.json"),
            "--id", "b-a-0", "--ready-file", str(ready)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        assert line[:2] == ["READY", "b-a-0"], line
        address = line[2]
        assert _health(address) == (True, "SERVING")
        assert ready.read_text() == f"SERVING b-a-0 {address}\n"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert not ready.exists()
    assert not list(tmp_path.glob(".ready.*"))  # no half-written file left either
