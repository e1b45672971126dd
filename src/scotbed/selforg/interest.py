"""Notification caches and their Bloom filters: how a broker estimates common interest I_ij.

A broker's cache holds the ids of the notifications its local clients published or consumed
(bounded, oldest out first). It broadcasts a Bloom filter of the cache; a receiver estimates
I_ij as the number of its own cached ids the filter claims (exact up to false positives).
Hashing is blake2b (stable across processes), never Python's salted ``hash()``; each id is hashed
once when it enters the cache, so building and probing filters is array work.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

CACHE_SIZE = 8192
BLOOM_BITS = 100_000
BLOOM_HASHES = 5


def positions(notification_id: str, bits: int, hashes: int) -> list[int]:
    """The k bit positions of an id: double hashing of one blake2b digest."""
    digest = hashlib.blake2b(notification_id.encode(), digest_size=16).digest()
    h1, h2 = int.from_bytes(digest[:8], "big"), int.from_bytes(digest[8:], "big") | 1
    return [(h1 + n * h2) % bits for n in range(hashes)]


@dataclass(frozen=True)
class BloomFilter:
    """m bits (``value``, little-endian within each byte) set at k positions per id."""

    bits: int
    hashes: int
    value: bytes

    @classmethod
    def of(cls, ids: Iterable[str], bits: int = BLOOM_BITS, hashes: int = BLOOM_HASHES) -> BloomFilter:
        pos = np.array([positions(i, bits, hashes) for i in ids], dtype=np.int64).reshape(-1, hashes)
        return cls.from_positions(pos, bits, hashes)

    @classmethod
    def from_positions(cls, pos: np.ndarray, bits: int, hashes: int) -> BloomFilter:
        if bits < 1 or hashes < 1:
            raise ValueError(f"a Bloom filter needs bits >= 1 and hashes >= 1, got {bits}, {hashes}")
        buf = np.zeros((bits + 7) // 8, dtype=np.uint8)
        flat = pos.ravel()
        np.bitwise_or.at(buf, flat >> 3, (1 << (flat & 7)).astype(np.uint8))
        return cls(bits, hashes, buf.tobytes())

    def claims(self, pos: np.ndarray) -> int:
        """How many rows of ``pos`` (one id's k positions per row) the filter holds."""
        if len(pos) == 0:
            return 0
        buf = np.frombuffer(self.value, dtype=np.uint8)
        hit = (buf[pos >> 3] >> (pos & 7)) & 1
        return int(hit.all(axis=1).sum())

    def __contains__(self, notification_id: str) -> bool:
        return self.claims(np.array([positions(notification_id, self.bits, self.hashes)])) == 1

    def common(self, ids: Iterable[str]) -> int:
        """How many of ``ids`` the filter claims: the estimate of I_ij from the receiver's cache."""
        rows = [positions(i, self.bits, self.hashes) for i in ids]
        return self.claims(np.array(rows, dtype=np.int64).reshape(-1, self.hashes))


class NotificationCache:
    """The ids a broker's clients published or consumed, at most ``size``, oldest evicted first.

    The ids' bit positions live in a ring of rows, so a filter or a probe is one array operation.
    """

    def __init__(self, size: int = CACHE_SIZE, bits: int = BLOOM_BITS, hashes: int = BLOOM_HASHES) -> None:
        if size < 1:
            raise ValueError(f"cache size must be >= 1, got {size}")
        self.size, self.bits, self.hashes = size, bits, hashes
        self._order: deque[str] = deque()
        self._rows = np.zeros((size, hashes), dtype=np.int64)  # row order does not matter
        self._times = np.zeros(size, dtype=np.float64)  # when each row's id entered
        self._added = 0

    def add(self, notification_id: str, time: float = 0.0) -> None:
        """Cache an id (once: the same notification is not published or consumed twice here)."""
        if len(self._order) == self.size:
            self._order.popleft()
        self._rows[self._added % self.size] = positions(notification_id, self.bits, self.hashes)
        self._times[self._added % self.size] = time
        self._order.append(notification_id)
        self._added += 1

    def ids(self) -> list[str]:
        return list(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def _positions(self, since: float | None) -> np.ndarray:
        rows = self._rows[: len(self._order)]
        return rows if since is None else rows[self._times[: len(self._order)] >= since]

    def recent(self, since: float | None = None) -> int:
        """I_i over the window: how many cached ids entered at or after ``since`` (None: all)."""
        return len(self._order) if since is None else int(self._positions(since).shape[0])

    def bloom(self, since: float | None = None) -> BloomFilter:
        """The filter of the ids that entered at or after ``since`` (the paper: the last interval)."""
        return BloomFilter.from_positions(self._positions(since), self.bits, self.hashes)

    def common(self, other: BloomFilter, since: float | None = None) -> int:
        """I_ij at this broker i from j's filter, over i's ids since ``since``."""
        if (other.bits, other.hashes) != (self.bits, self.hashes):
            raise ValueError("Bloom filters of different shapes cannot be compared")
        return other.claims(self._positions(since))
