"""Every broker's Admin.Status, asked in the background: the figures of a live progress line.

A daemon thread asks every broker once per ``interval_s`` (all at once, each call bounded by
``timeout_s``) and keeps the latest replies. A broker that does not answer in time is left out of
that round, so a slow or stopped broker never holds up the caller of :meth:`StatusPoller.latest`,
which only reads what the thread last stored. Status is the cheapest admin call (no run token, a copy
of the broker's counters and queue lengths); the poller adds one such call per broker per interval.
The thread uses blocking gRPC with futures, not asyncio, so it shares no event loop with its caller.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import grpc

from scotbed.broker import tls
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg

INTERVAL_S = 1.0  # one round of Status calls a second
TIMEOUT_S = 0.5  # a broker that takes longer is left out of the round


class StatusPoller:
    """``with StatusPoller(addresses) as p: ... p.latest()``: the brokers' latest Status replies."""

    def __init__(
        self, addresses: Mapping[str, str], interval_s: float = INTERVAL_S, timeout_s: float = TIMEOUT_S
    ) -> None:
        self.addresses = dict(addresses)
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.rounds = 0  # rounds of calls finished, answered or not
        self._latest: dict[str, pb.StatusReply] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="status-poller", daemon=True)

    def __enter__(self) -> StatusPoller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Ends the thread; a round in flight ends within ``timeout_s``."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.timeout_s + 1.0)

    def latest(self) -> dict[str, pb.StatusReply]:
        """The replies of the last round, by broker id (those that did not answer are missing)."""
        with self._lock:
            return dict(self._latest)

    def _run(self) -> None:
        channels = {b: tls.channel(a) for b, a in self.addresses.items()}
        stubs = {b: pbg.AdminStub(c) for b, c in channels.items()}
        try:
            while not self._stop.is_set():
                replies = self._round(stubs)
                with self._lock:
                    self._latest = replies
                self.rounds += 1
                self._stop.wait(self.interval_s)
        finally:
            for c in channels.values():
                c.close()

    def _round(self, stubs: Mapping[str, Any]) -> dict[str, pb.StatusReply]:
        calls = {b: s.Status.future(pb.StatusRequest(), timeout=self.timeout_s) for b, s in stubs.items()}
        replies = {}
        for b, call in calls.items():
            try:
                replies[b] = call.result()
            except (grpc.RpcError, grpc.FutureCancelledError):
                continue
        return replies
