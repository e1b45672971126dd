"""The local backend refuses an overlay the host cannot hold, before starting any process."""

from __future__ import annotations

from pathlib import Path

from scotbed_cli import run_quickstart

from scotbed.orchestrator.backends.capacity import BrokerFootprint, HostRoom, host_room, problem


def test_memory_and_task_limits_name_the_most_brokers_that_fit() -> None:
    fp = BrokerFootprint(memory_mib=80, tasks=12)
    assert problem(10, HostRoom(memory_mib=1000, tasks=1000), fp) is None
    mem = problem(20, HostRoom(memory_mib=1000, tasks=None), fp)
    assert mem is not None and "1600 MiB" in mem and "at most 12 brokers" in mem
    tasks = problem(20, HostRoom(memory_mib=None, tasks=100), fp)
    assert tasks is not None and "240 tasks" in tasks and "at most 8 brokers" in tasks
    assert problem(10**6, HostRoom(None, None), fp) is None  # unknown limits: no refusal


def test_this_host_reports_its_room() -> None:
    room = host_room()
    assert room.memory_mib is None or room.memory_mib > 0


def test_a_run_too_big_for_the_host_is_refused_with_exit_2_before_any_broker_starts(tmp_path: Path) -> None:
    room = host_room()
    assert room.memory_mib is not None
    # four times what fits now: the check must refuse even if other processes free memory between this
    # reading and the run's own (with + 1 alone, a host that freed memory started hundreds of brokers)
    n = 4 * (room.memory_mib // BrokerFootprint().memory_mib) + 1
    if n > 5000:  # the spec's own MAX_BROKERS would refuse first
        return
    sets = [
        "topology.kind=tree",
        "topology.connectivity=1",
        f"topology.acyclic={{kind: path, n: {n}}}",
        "routing=flooding",
    ]
    proc = run_quickstart(tmp_path, sets)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert f"{n} local brokers need about" in proc.stderr and "SCOTBED_IGNORE_HOST_CAPACITY=1" in proc.stderr
    assert not list((tmp_path / "runs").glob("*/logs/*.err"))  # no broker process was started
