"""The link-swap protocol: tree versions, a marker wave per version, and parking.

The paper leaves the swap to its reference [9], which we do not have; this is scotbed's protocol
(docs/readings.md asks for marker waves in the FIFO link streams with parking). Every committed swap
makes a new tree version v+1 = T_v + e_n − e_r, announced by a flood (NEWVER, carrying the swap).

- A notification carries the version its publisher's broker had adopted when it was published and
  is routed on that version's tree only, so it reaches every broker of its delivery tree once.
- On adopting v+1 a broker starts the END(v) wave on T_v: it sends END(v) to a T_v neighbour n once
  it has END(v) from all its other T_v neighbours and has finished v − 1 (so no v-notification is
  still parked here). Links are FIFO, so END(v) is the last
  v-notification on each link in each direction; a broker that has END(v) from all its T_v
  neighbours has seen every v-notification it will ever see: it has *finished* v.
- A notification of version w is processed only when the broker has finished every version < w;
  until then it is parked, and parked ones are released in arrival order. So at every broker all
  v-notifications come before any (v+1)-notification, and FIFO tree paths keep each publisher's
  order within a version: nothing is lost, duplicated or reordered per publisher.
- e_r stays open until END(v) has crossed it both ways (then ``link_down``); e_n is up at commit.

This module is pure: it says what to send; the simulator or the broker runtime sends it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from scotbed.selforg.costs import Edge


@dataclass(frozen=True)
class Send:
    """Send END(``version``) to ``to``."""

    to: str
    version: int


@dataclass
class Versions:
    """One broker's tree versions and END waves."""

    me: str
    neighbours: dict[int, frozenset[str]]
    version: int = 0
    finished: int = -1
    got: dict[int, set[str]] = field(default_factory=dict)
    sent: dict[int, set[str]] = field(default_factory=dict)
    removed: dict[int, str] = field(default_factory=dict)  # v -> the neighbour lost from T_v to T_v+1
    low: int = 0  # the oldest version whose END sends are not all out

    @classmethod
    def start(cls, me: str, neighbours: frozenset[str]) -> Versions:
        return cls(me, {0: frozenset(neighbours)})

    def adopt(self, version: int, add: Edge, remove: Edge) -> list[Send]:
        """Take version ``version`` = T_{version-1} + add − remove; start END(version−1)."""
        if version != self.version + 1:
            raise ValueError(f"{self.me}: version {version} after {self.version}")
        old = self.neighbours[self.version]
        new = set(old)
        if self.me in remove:
            lost = remove[1] if remove[0] == self.me else remove[0]
            new.discard(lost)
            self.removed[self.version] = lost
        if self.me in add:
            new.add(add[1] if add[0] == self.me else add[0])
        self.neighbours[version] = frozenset(new)
        self.version = version
        return self._wave()

    def on_end(self, version: int, sender: str) -> list[Send]:
        self.got.setdefault(version, set()).add(sender)
        return self._wave()

    def _wave(self) -> list[Send]:
        """Advance ``finished``, then the END sends now due. END(v) waits until v − 1 is finished:
        a v-notification parked here must go out before END(v) does."""
        while self.finished + 1 < self.version and self.neighbours[self.finished + 1] <= self.got.get(
            self.finished + 1, set()
        ):
            self.finished += 1
        out = []
        for v in range(self.low, min(self.version, self.finished + 2)):
            got, sent = self.got.setdefault(v, set()), self.sent.setdefault(v, set())
            for n in sorted(self.neighbours[v] - sent):
                if self.neighbours[v] - {n} <= got:
                    sent.add(n)
                    out.append(Send(n, v))
            if v == self.low and sent == self.neighbours[v]:
                self.low += 1
        return out

    def ready(self, version: int) -> bool:
        """May a notification of ``version`` be processed now?"""
        return self.finished >= version - 1

    def closed(self, v: int) -> str | None:
        """The neighbour whose link left at v+1, once END(v) has crossed it both ways."""
        lost = self.removed.get(v)
        if lost is not None and lost in self.got.get(v, set()) and lost in self.sent.get(v, set()):
            return lost
        return None


@dataclass
class Parking:
    """Notifications waiting for their version, in arrival order."""

    items: list[tuple[int, Any]] = field(default_factory=list)

    def admit(self, versions: Versions, version: int, item: Any) -> bool:
        """True if ``item`` may be processed now; otherwise it is parked."""
        if versions.ready(version):
            return True
        self.items.append((version, item))
        return False

    def release(self, versions: Versions) -> Iterator[Any]:
        """The parked items that became ready, oldest first; the rest stay parked."""
        keep: list[tuple[int, Any]] = []
        out: list[tuple[int, Any]] = []
        for version, item in self.items:
            (out if versions.ready(version) else keep).append((version, item))
        self.items = keep
        return (item for _, item in out)
