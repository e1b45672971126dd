"""RunData's shared inputs: computed once however many threads ask, and different inputs at once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from scotbed.analysis.context import shared_input


class Inputs:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.both_running = threading.Barrier(2, timeout=5)

    @shared_input
    def slow(self) -> int:
        self.calls.append("slow")
        time.sleep(0.2)
        return 1

    @shared_input
    def a(self) -> str:
        self.both_running.wait()  # raises BrokenBarrierError unless b computes at the same time
        return "a"

    @shared_input
    def b(self) -> str:
        self.both_running.wait()
        return "b"


def test_an_input_asked_for_by_four_threads_is_computed_once() -> None:
    x = Inputs()
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda _: x.slow, range(4))) == [1, 1, 1, 1]
    assert x.calls == ["slow"]
    assert x.slow == 1 and x.calls == ["slow"]


def test_two_inputs_compute_at_the_same_time() -> None:
    x = Inputs()
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.submit(lambda: x.a), pool.submit(lambda: x.b)
        assert (a.result(), b.result()) == ("a", "b")
