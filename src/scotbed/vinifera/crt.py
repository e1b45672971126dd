"""The content routing table (CRT): per requesting neighbour and attribute, the requested points and
the full subscriptions behind them, each piece expiring unless a periodic lookup refreshes it."""

from __future__ import annotations

from dataclasses import dataclass, field

from scotbed.vinifera.interest import Event, Subscription
from scotbed.vinifera.ring import Interval, contains, union


@dataclass
class CRT:
    """``rows[(neighbour, attr)][(owner, piece)] = (subscription, expiry round)``."""

    rows: dict[tuple[int, str], dict[tuple[int, Interval], tuple[Subscription, int]]] = field(
        default_factory=dict
    )

    def install(self, nbr: int, attr: str, owner: int, iv: Interval, sub: Subscription, expires: int) -> None:
        self.rows.setdefault((nbr, attr), {})[(owner, iv)] = (sub, expires)

    def expire(self, now: int) -> None:
        for key in list(self.rows):
            row = {k: v for k, v in self.rows[key].items() if v[1] > now}
            if row:
                self.rows[key] = row
            else:
                del self.rows[key]

    def drop_neighbour(self, nbr: int) -> None:
        for key in [k for k in self.rows if k[0] == nbr]:
            del self.rows[key]

    def ranges(self, nbr: int, attr: str) -> list[Interval]:
        """The aggregated range of one neighbour on one attribute (Fig. 2b)."""
        return union(iv for _, iv in self.rows.get((nbr, attr), {}))

    def targets(self, attr: str, point: int, event: Event, exclude: int) -> list[int]:
        """Neighbours with a registered subscription that matches ``event`` over a piece holding ``point``."""
        out = []
        for (nbr, a), row in self.rows.items():
            if a != attr or nbr == exclude:
                continue
            if any(contains(iv, point) and sub.matches(event) for (_, iv), (sub, _) in row.items()):
                out.append(nbr)
        return sorted(out)
