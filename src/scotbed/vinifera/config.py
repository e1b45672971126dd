"""Parameters of a peer (paper §IV-V); the defaults are the one home of each value."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PeerConfig:
    """Id space, link budget (2 ring links + K_sw + K_f = 10 in the paper; friend slots no candidate
    of positive utility fills go to small-world links), gossip and CRT timing."""

    id_space: int = 1 << 20
    #: (attribute, min, max) in attribute-index order
    domains: tuple[tuple[str, float, float], ...] = (("x", 0.0, 1000.0),)
    k_sw: int = 2
    k_f: int = 6
    view_size: int = 10
    shuffle_len: int = 5
    #: rounds between re-sent subscription lookups; CRT entries live ``crt_ttl`` rounds
    refresh: int = 3
    crt_ttl: int = 7
    #: load imbalance with the successor that moves the id (None: no load balancing)
    beta: int | None = 5
    ring_cache: int = 3
    max_hops: int = 64
    #: ranking of candidates for friend links is recomputed from at most this many descriptors
    gossip_len: int = field(default=12)

    @property
    def attrs(self) -> tuple[str, ...]:
        return tuple(a for a, _, _ in self.domains)

    def domain(self, attr: str) -> tuple[float, float]:
        for a, lo, hi in self.domains:
            if a == attr:
                return (lo, hi)
        raise KeyError(attr)
