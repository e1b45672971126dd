"""The Ferry-like rendezvous baseline (readings): ring and small-world links, no friend links, the RV
of an attribute is the hash of its name, no load balancing. Same machinery as Vinifera otherwise:
a subscription is installed on the path to the RV of its first constrained attribute's name, and
events go to the RV of each attribute's name and down the CRTs."""

from __future__ import annotations

import random
from dataclasses import replace

from scotbed.vinifera.config import PeerConfig
from scotbed.vinifera.interest import Subscription
from scotbed.vinifera.peer import Peer
from scotbed.vinifera.ring import Interval, name_hash


def baseline_config(cfg: PeerConfig) -> PeerConfig:
    """The baseline spends the whole link budget on small-world links and never balances."""
    return replace(cfg, k_sw=cfg.k_sw + cfg.k_f, k_f=0, beta=None)


class BaselinePeer(Peer):
    """A Ferry-like peer: rendezvous by attribute name."""

    def __init__(self, name: int, ident: int, sub: Subscription | None, cfg: PeerConfig, rng: random.Random):
        super().__init__(name, ident, sub, baseline_config(cfg), rng)

    def install_attr(self) -> str | None:
        """Ferry installs on one attribute; the baseline takes the first constrained one."""
        return self.sub.attrs[0] if self.sub is not None and self.sub.attrs else None

    def lookup_iv(self, attr: str) -> Interval:
        p = name_hash(attr, self.cfg.id_space)
        return (p, p)

    def event_point(self, attr: str, value: float) -> int:
        return name_hash(attr, self.cfg.id_space)
