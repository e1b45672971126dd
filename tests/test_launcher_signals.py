"""A SIGTERM that reaches the launcher while it starts a broker waits until the child is recorded."""

from __future__ import annotations

import os
import signal
import threading
import time
from types import FrameType

from scotbed.broker.launcher import signals_deferred


def test_a_signal_sent_to_the_process_from_another_thread_waits_for_the_block() -> None:
    """A process-directed signal goes to any thread that does not block it (gRPC's threads, a
    progress thread): the deferral must hold it back whichever thread the kernel picks."""
    seen: list[str] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        seen.append("handled")

    go = threading.Event()

    def send() -> None:  # a thread started before the block, as gRPC's are, with SIGTERM unblocked
        go.wait()
        os.kill(os.getpid(), signal.SIGTERM)

    sender = threading.Thread(target=send)
    sender.start()
    old = signal.signal(signal.SIGTERM, handler)
    try:
        with signals_deferred():
            go.set()
            sender.join()
            deadline = time.monotonic() + 0.2
            while time.monotonic() < deadline:  # bytecodes run: an undeferred handler would run here
                pass
            seen.append("block ends")
        seen.append("after")
    finally:
        signal.signal(signal.SIGTERM, old)
    assert seen == ["block ends", "handled", "after"]


def test_without_a_signal_the_handlers_are_restored_untouched() -> None:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise AssertionError("not sent")

    old = signal.signal(signal.SIGINT, handler)
    try:
        with signals_deferred():
            pass
        assert signal.getsignal(signal.SIGINT) is handler
    finally:
        signal.signal(signal.SIGINT, old)
