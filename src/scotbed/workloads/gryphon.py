"""Gryphon's link-matching workload (Banavar et al. 1999, sec. 5): an enumerated equality schema.

Why: link matching pays off when few subscriptions match a notification and when publishers and
subscribers of one region prefer the same values; this workload controls both, as the paper's did.

- Schema: ``attributes`` attributes ``a0..a{N-1}``, each with ``values`` integer values ``0..V-1``.
- Preferences: every value is drawn from a Zipf law (exponent ``zipf_s``) over a *region's ranking* of
  the values. Region ``r`` ranks the values of attribute ``i`` rotated by ``r + i`` places, so
  neighbouring regions prefer different values and a region's publishers prefer what its subscribers
  prefer (the paper's region-correlated preferences).
- Subscriptions: conjunctions of ``a_i = v`` tests; each attribute is a don't-care (left out) with
  probability ``dont_care``. A client holds ``per_client`` subscriptions.
- Notifications: every attribute carries a value drawn from the publisher's region ranking.
- Arrivals: a Poisson process (exponential gaps) at a publisher's rate.
- Calibration: :func:`calibrate` finds the don't-care probability at which a target fraction of the
  subscriptions matches a notification. Each test carries a fixed uniform draw ``u`` and is left out when
  ``u < dont_care`` (common random numbers), so a subscription matches a notification exactly when
  ``dont_care`` exceeds the largest ``u`` of its mismatching tests: the target is a quantile of those
  thresholds over a sample, computed exactly, with no search.

Pure: every function is deterministic in its seed.
"""

from __future__ import annotations

import bisect
import functools
import math
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scotbed.experiment.workload_params import GryphonParams
from scotbed.filters import Filter, Predicate
from scotbed.workloads.schema import GRYPHON, GRYPHON_MAX_ATTRIBUTES, Quote, Schema


@dataclass(frozen=True)
class GryphonSchema:
    attributes: int = 15
    values: int = 3
    zipf_s: float = 1.0

    def __post_init__(self) -> None:
        if not 1 <= self.attributes <= GRYPHON_MAX_ATTRIBUTES or self.values < 1:
            raise ValueError(
                f"gryphon schema: needs 1..{GRYPHON_MAX_ATTRIBUTES} attributes and >= 1 value, got {self}"
            )
        if self.zipf_s < 0:
            raise ValueError(f"gryphon schema: zipf_s must be >= 0, got {self.zipf_s}")

    @classmethod
    def of(cls, params: GryphonParams) -> GryphonSchema:
        return cls(params.attributes, params.values, params.zipf_s)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f"a{i}" for i in range(self.attributes))

    def cumulative(self) -> list[float]:
        """The Zipf law over value ranks 1..V, as a cumulative distribution."""
        w = [1.0 / (k + 1) ** self.zipf_s for k in range(self.values)]
        total, acc, out = sum(w), 0.0, []
        for x in w:
            acc += x
            out.append(acc / total)
        out[-1] = 1.0
        return out

    def ranked_value(self, region: int, attr: int, rank: int) -> int:
        """The value region ``region`` ranks ``rank``-th (0 = most preferred) for attribute ``attr``."""
        return (rank + region + attr) % self.values

    def draw(self, rng: random.Random, region: int, attr: int, cdf: Sequence[float]) -> int:
        return self.ranked_value(region, attr, bisect.bisect_left(cdf, rng.random()))


def subscriptions(
    schema: GryphonSchema, regions: Sequence[int], per_client: int, dont_care: float, seed: int
) -> list[list[Filter]]:
    """``per_client`` filters for each client (one region index per client), in client order."""
    if not 0.0 <= dont_care <= 1.0:
        raise ValueError(f"gryphon: dont_care must be in [0, 1], got {dont_care}")
    names = schema.names
    flat = [
        Filter(tuple(Predicate(names[i], "=", v) for i, (u, v) in enumerate(tests) if u >= dont_care))
        for tests in _draws(schema, regions, per_client, seed)
    ]
    return [flat[k : k + per_client] for k in range(0, len(flat), per_client)]


def _draws(
    schema: GryphonSchema, regions: Sequence[int], per_client: int, seed: int
) -> list[list[tuple[float, int]]]:
    """Per client, per filter: the (u, value) draw of every attribute (see the module doc)."""
    cdf = schema.cumulative()
    out: list[list[tuple[float, int]]] = []
    for client, region in enumerate(regions):
        rng_star = random.Random(f"gryphon-star:{seed}:{client}")
        rng_val = random.Random(f"gryphon-value:{seed}:{client}")
        for _ in range(per_client):
            out.append(
                [(rng_star.random(), schema.draw(rng_val, region, i, cdf)) for i in range(schema.attributes)]
            )
    return out


def notifications(schema: GryphonSchema, region: int, count: int, seed: int) -> list[Quote]:
    """``count`` notifications of a publisher in ``region``."""
    it = GryphonSource(schema, region).stream(seed)
    return [next(it) for _ in range(count)]


class GryphonSource:
    """The notifications of the publishers of one region (a :class:`QuoteSource` for the publishers)."""

    schema: Schema = GRYPHON

    def __init__(self, schema: GryphonSchema, region: int) -> None:
        self.gryphon, self.region = schema, region

    def stream(self, seed: int) -> Iterator[Quote]:
        g, region = self.gryphon, self.region
        cdf = g.cumulative()
        rng = random.Random(f"gryphon-pub:{seed}:{region}")
        names = g.names
        while True:
            yield {name: g.draw(rng, region, i, cdf) for i, name in enumerate(names)}

    def symbols(self) -> list[str]:
        return []


@functools.lru_cache(maxsize=64)
def poisson_offsets(rate_per_s: float, count: int, seed: int) -> tuple[float, ...]:
    """:func:`arrivals`, cached: a publisher's schedule asks for one offset at a time."""
    return tuple(arrivals(rate_per_s, count, seed))


def arrivals(rate_per_s: float, count: int, seed: int) -> list[float]:
    """Offsets (s) of ``count`` Poisson arrivals at ``rate_per_s``, the first after one gap."""
    if rate_per_s <= 0:
        raise ValueError(f"gryphon: rate must be > 0, got {rate_per_s}")
    rng = random.Random(f"gryphon-arrivals:{seed}")
    t, out = 0.0, []
    for _ in range(count):
        t += -math.log(1.0 - rng.random()) / rate_per_s
        out.append(t)
    return out


def matching_fraction(filters: Sequence[Filter], events: Sequence[Quote]) -> float:
    """The mean fraction of ``filters`` a notification of ``events`` matches."""
    if not filters or not events:
        return 0.0
    hits = sum(f.matches(e) for e in events for f in filters)
    return hits / (len(filters) * len(events))


def calibrate(
    schema: GryphonSchema,
    regions: Sequence[int],
    target: float,
    seed: int,
    sample_clients: int = 300,
    sample_events: int = 300,
) -> float:
    """The don't-care probability at which a fraction ``target`` of subscriptions matches a notification.

    Subscribers and publishers are spread evenly over ``regions``; the fraction is exact on a sample of
    ``sample_clients`` one-filter clients (the draws :func:`subscriptions` makes with ``seed``) and
    ``sample_events`` notifications per region.
    """
    if not 0.0 < target <= 1.0:
        raise ValueError(f"gryphon: target matching fraction must be in (0, 1], got {target}")
    if not regions:
        raise ValueError("gryphon: calibration needs at least one region")
    sub_regions = [regions[k % len(regions)] for k in range(sample_clients)]
    draws = np.asarray(_draws(schema, sub_regions, 1, seed), dtype=np.float64)  # clients x attrs x (u, v)
    u, v = draws[:, :, 0], draws[:, :, 1]
    events = [e for r in sorted(set(regions)) for e in notifications(schema, r, sample_events, seed + 1)]
    ev = np.asarray([[e[n] for n in schema.names] for e in events], dtype=np.float64)
    thresholds = []
    for k in range(len(u)):  # a subscription matches when dont_care > its largest mismatching u
        mismatch = v[k][None, :] != ev
        thresholds.append(np.where(mismatch, u[k][None, :], -1.0).max(axis=1))
    t = np.sort(np.concatenate(thresholds))
    k = max(1, math.ceil(target * len(t)))
    return float(min(1.0, np.nextafter(max(t[k - 1], 0.0), 2.0)))


def gryphon_filters(
    params: GryphonParams, client_regions: Sequence[int], regions: Iterable[int], seed: int
) -> list[list[Filter]]:
    """The subscriptions of a workload's gryphon parameters, per client (regions as indexes)."""
    schema = GryphonSchema.of(params)
    dont_care = params.dont_care
    if dont_care is None:
        dont_care = calibrate(schema, sorted(set(regions)), params.matching, seed)
    return subscriptions(schema, client_regions, params.subscriptions_per_client, dont_care, seed)


def region_indexes(brokers: Iterable[Any]) -> dict[str, int]:
    """Broker id -> index of its region among the sorted region names (brokers with ``id``, ``region``)."""
    brokers = list(brokers)
    names = {r: k for k, r in enumerate(sorted({b.region for b in brokers}))}
    return {b.id: names[b.region] for b in brokers}
