"""Notification caches and their Bloom filters: how a broker estimates common interest I_ij.

A broker's cache holds the ids of the notifications its local clients published or consumed
(bounded, oldest out first). It broadcasts a Bloom filter of the cache; a receiver estimates
I_ij as the number of its own cached ids the filter claims (exact up to false positives).
Hashing is blake2b (stable across processes), never Python's salted ``hash()``.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

CACHE_SIZE = 8192
BLOOM_BITS = 100_000
BLOOM_HASHES = 5


@dataclass(frozen=True)
class BloomFilter:
    """m bits, k positions per id by double hashing of one blake2b digest."""

    bits: int
    hashes: int
    value: bytes = b""

    @classmethod
    def of(cls, ids: Iterable[str], bits: int = BLOOM_BITS, hashes: int = BLOOM_HASHES) -> BloomFilter:
        if bits < 1 or hashes < 1:
            raise ValueError(f"a Bloom filter needs bits >= 1 and hashes >= 1, got {bits}, {hashes}")
        value = bytearray((bits + 7) // 8)
        for i in ids:
            for pos in _positions(i, bits, hashes):
                value[pos >> 3] |= 1 << (pos & 7)
        return cls(bits, hashes, bytes(value))

    def __contains__(self, notification_id: str) -> bool:
        return all(
            self.value[pos >> 3] >> (pos & 7) & 1
            for pos in _positions(notification_id, self.bits, self.hashes)
        )

    def common(self, ids: Iterable[str]) -> int:
        """How many of ``ids`` the filter claims: the estimate of I_ij from the receiver's cache."""
        return sum(1 for i in ids if i in self)


def _positions(notification_id: str, bits: int, hashes: int) -> list[int]:
    digest = hashlib.blake2b(notification_id.encode(), digest_size=16).digest()
    h1, h2 = int.from_bytes(digest[:8], "big"), int.from_bytes(digest[8:], "big") | 1
    return [(h1 + n * h2) % bits for n in range(hashes)]


class NotificationCache:
    """The ids a broker's clients published or consumed, at most ``size``, oldest evicted first."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        if size < 1:
            raise ValueError(f"cache size must be >= 1, got {size}")
        self.size = size
        self._ids: OrderedDict[str, None] = OrderedDict()

    def add(self, notification_id: str) -> None:
        self._ids[notification_id] = None
        self._ids.move_to_end(notification_id)
        while len(self._ids) > self.size:
            self._ids.popitem(last=False)

    def ids(self) -> list[str]:
        return list(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def bloom(self, bits: int = BLOOM_BITS, hashes: int = BLOOM_HASHES) -> BloomFilter:
        return BloomFilter.of(self._ids, bits, hashes)
