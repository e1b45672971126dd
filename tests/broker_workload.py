"""A small random stock-quote workload shared by the simulator and real-process broker tests."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scotbed.filters import Filter

if TYPE_CHECKING:
    from scotbed.broker.sim import SimNetwork

SYMBOLS = ["IBM", "SUN", "HP", "DELL", "ACME"]


@dataclass(frozen=True)
class Workload:
    subs: list[tuple[str, str, Filter]]  # (sub_id, host broker, filter)
    pubs: list[tuple[str, str, dict[str, object]]]  # (pub_id, host broker, attrs)

    def expected(self) -> set[tuple[str, str]]:
        """(pub_id, sub_id) pairs that must be delivered exactly once."""
        return {(p, s) for p, _, attrs in self.pubs for s, _, f in self.subs if f.matches(attrs)}

    def assert_delivered_exactly_once(self, net: SimNetwork) -> None:
        """Every expected pair delivered once, at the subscriber's host broker, and nothing else."""
        assert set(net.deliveries) == self.expected()
        assert set(net.deliveries.values()) <= {1}
        hosts = {s: h for s, h, _ in self.subs}
        assert all(net.delivered_at[k] == hosts[k[1]] for k in net.deliveries)


def make_workload(brokers: list[str], n_subs: int, n_pubs: int, seed: int) -> Workload:
    rng = random.Random(seed)
    subs = []
    for k in range(n_subs):
        sym = rng.choice(SYMBOLS)
        lo = rng.randint(50, 150)
        text = rng.choice(
            [
                f'symbol = "{sym}"',
                f'symbol = "{sym}" and price between [{lo}, {lo + 40}]',
                f"price > {lo + 30}",
                f'symbol prefix "{sym[0]}" and volume >= {rng.randint(0, 900)}',
            ]
        )
        subs.append((f"s{k}", rng.choice(brokers), Filter.parse(text)))
    pubs = [
        (
            f"p{k}",
            rng.choice(brokers),
            {"symbol": rng.choice(SYMBOLS), "price": rng.randint(40, 200), "volume": rng.randint(0, 1000)},
        )
        for k in range(n_pubs)
    ]
    return Workload(subs, pubs)
