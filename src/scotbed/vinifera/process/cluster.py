"""Launch peer processes (a :class:`~scotbed.vinifera.process.launch.Launcher`: this host by default) and
drive them in rounds.

The driver plays the simulator's part over gRPC: ``round`` ticks every peer (and waits until the
run is quiescent, every sent message handled), ``publish`` and ``subscribe`` go through Control.
So a process run and a :class:`~scotbed.vinifera.sim.Simulation` of the same case take the same steps.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc

from scotbed import contract
from scotbed.broker.launcher import LaunchError
from scotbed.v1 import scotbed_pb2 as pb
from scotbed.v1 import scotbed_pb2_grpc as pbg
from scotbed.vinifera import codec
from scotbed.vinifera.config import PeerConfig
from scotbed.vinifera.interest import Event, Subscription
from scotbed.vinifera.messages import Desc
from scotbed.vinifera.process.launch import Launcher, LocalLauncher

#: the run file every peer process reads (name, id, subscription, address of every peer)
RUN_FILE = "peers.json"


def link_counts(states: Mapping[int, Mapping[str, Any]]) -> tuple[tuple[int, int, int], ...]:
    """Per ordered pair of live peers (a, b): messages a knows b acknowledged, a's sends to b that
    timed out, and messages b handled from a. Only live pairs: a killed peer's counts are gone."""
    live = [str(n) for n in states]
    return tuple(
        (
            states[int(a)]["sent_to"].get(b, 0),
            states[int(a)].get("unsure_to", {}).get(b, 0),
            states[int(b)]["handled_from"].get(a, 0),
        )
        for a in live
        for b in live
    )


def accounted(counts: tuple[int, int, int]) -> bool:
    """Every message a sent to b was handled, and b handled nothing else: a send that timed out on
    a loaded host (DEADLINE_EXCEEDED) may have been handled or not, so it counts either way."""
    sent, unsure, handled = counts
    return sent <= handled <= sent + unsure


class PeerCluster:
    """Peers ``name -> (ring id, subscription)`` as processes; a context manager that stops them all.
    ``capacity``: event messages a peer takes per round (the simulator's X), None for no bound."""

    def __init__(
        self,
        workdir: Path,
        peers: Mapping[int, tuple[int, Subscription | None]],
        cfg: PeerConfig,
        routing: str,
        seed: int = 0,
        ready_timeout_s: float = 60.0,
        launcher: Launcher | None = None,
        capacity: int | None = None,
    ) -> None:
        self.capacity = capacity
        self.workdir, self.peers, self.cfg, self.routing, self.seed = workdir, dict(peers), cfg, routing, seed
        self.ready_timeout_s = ready_timeout_s
        self.run_id = uuid.uuid4().hex
        self.launcher: Launcher = launcher or LocalLauncher()
        self.killed: set[int] = set()
        self.addresses: dict[int, str] = {}
        self.now = 0
        self.next_eid = 0
        self._loop = asyncio.new_event_loop()
        self._channels: dict[int, grpc.aio.Channel] = {}

    def __enter__(self) -> PeerCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def event_log(self, name: int) -> Path:
        return self.workdir / contract.events_file(contract.peer_node(name))

    def start(self) -> None:
        (self.workdir / contract.EVENTS_DIR).mkdir(parents=True, exist_ok=True)
        places = self.launcher.places(self.workdir, list(self.peers))
        run = {
            "run": self.run_id,
            "routing": self.routing,
            "seed": self.seed,
            "config": codec.config_out(self.cfg),
            "capacity": self.capacity,
            "peers": [
                {
                    "name": n,
                    "id": i,
                    "sub": codec.sub_out(s),
                    "address": places[n].address,
                    "bind": places[n].bind,
                    "log": places[n].log,
                }
                for n, (i, s) in self.peers.items()
            ],
        }
        run_file = self.workdir / RUN_FILE
        run_file.write_text(json.dumps(run, indent=1))
        self.addresses = self.launcher.start(self.workdir, run_file)
        self._wait_ready()
        self.launcher.release()

    def _wait_ready(self) -> None:
        """Every peer answers Control; a :class:`LaunchError` names the ones that exited or hung."""
        try:
            self._call_all("state", {}, wait_ready=True)
        except grpc.aio.AioRpcError as e:
            bad = [f"{n} ({why})" for n, why in self.launcher.exited().items()]
            why = "; ".join(bad) or f"none exited, one did not answer within {self.ready_timeout_s:.0f} s"
            raise LaunchError(f"peers did not come up ({e.code().name}): {why}") from None

    def stop(self) -> None:
        """Stop every peer (the launcher's way); close the driver's channels."""
        try:
            self.launcher.stop()
        finally:
            if not self._loop.is_closed():
                self._loop.run_until_complete(self._close_channels())
                self._loop.close()

    def kill(self, name: int) -> None:
        """A peer failure: SIGKILL; its neighbours learn of it from failed sends. Its event log is
        flushed first: the log is the testbed's measurement, not the peer's state, and a SIGKILL
        would drop its buffered lines (the events it published, the deliveries it logged)."""
        self.call(name, "flush")
        self.launcher.kill(name)
        self.killed.add(name)

    # --- Control calls ---
    def call(self, name: int, op: str, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self._loop.run_until_complete(self._call(name, op, args or {}, False))

    def _call_all(
        self, op: str, args: Mapping[str, Any], wait_ready: bool = False
    ) -> dict[int, dict[str, Any]]:
        live = [n for n in self.peers if n not in self.killed]

        async def all_of() -> list[dict[str, Any]]:
            return await asyncio.gather(*(self._call(n, op, args, wait_ready) for n in live))

        return dict(zip(live, self._loop.run_until_complete(all_of()), strict=True))

    async def _close_channels(self) -> None:
        await asyncio.gather(*(c.close() for c in self._channels.values()))

    async def _call(self, name: int, op: str, args: Mapping[str, Any], wait_ready: bool) -> dict[str, Any]:
        if name not in self._channels:
            self._channels[name] = grpc.aio.insecure_channel(self.addresses[name])
        stub = pbg.PeerStub(self._channels[name])
        req = pb.PeerCall(op=op, body=json.dumps(args).encode())
        rep = await stub.Control(req, timeout=self.ready_timeout_s, wait_for_ready=wait_ready)
        out: dict[str, Any] = json.loads(rep.body)
        return out

    def quiescent(self, timeout_s: float | None = None) -> dict[int, dict[str, Any]]:
        """Wait until every sent message was handled and no queue holds one, twice in a row."""
        timeout_s = self.ready_timeout_s if timeout_s is None else timeout_s
        deadline, last = time.monotonic() + timeout_s, None
        while time.monotonic() < deadline:
            states = self._call_all("state", {})
            pairs = link_counts(states)
            settled = all(s["queued"] == 0 for s in states.values()) and all(map(accounted, pairs))
            if settled and pairs == last:
                return states
            last = pairs if settled else None
            time.sleep(0.02)
        raise LaunchError(f"peers not quiescent after {timeout_s} s")

    # --- the run's steps (the simulator's round, publish, inject) ---
    def wire(self, links: Mapping[int, Mapping[str, Any]]) -> None:
        """Fixed links, as a scripted case builds them: ``{name: {succs, preds, friends, sw, primary}}``
        with descriptors as :class:`Desc`."""
        for n, w in links.items():
            body = {k: [codec.desc_out(d) for d in v] if k != "primary" else v for k, v in w.items()}
            self.call(n, "wire", body)

    def bootstrap(self, contacts: Mapping[int, Iterable[int]]) -> None:
        descs = {n: codec.desc_out(Desc(n, i, 0, s)) for n, (i, s) in self.peers.items()}
        for n, cs in contacts.items():
            self.call(n, "bootstrap", {"contacts": [descs[c] for c in cs]})

    def round(self, publications: Sequence[tuple[int, Event]] = ()) -> list[int]:
        """Every live peer ticks, the run goes quiescent, then the round's events are published."""
        self.now += 1
        self._call_all("tick", {"now": self.now})
        self.quiescent()
        return [self.publish(pub, ev) for pub, ev in publications]

    def publish(self, publisher: int, event: Event) -> int:
        eid, self.next_eid = self.next_eid, self.next_eid + 1
        self.call(publisher, "publish", {"eid": eid, "event": codec.event_out(event)})
        self.quiescent()
        return eid

    def subscribe(self, name: int) -> None:
        self.call(name, "subscribe")
        self.quiescent()

    def flush(self) -> None:
        self._call_all("flush", {})
