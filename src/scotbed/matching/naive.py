"""The reference engine: scan every filter. Slow, obviously right."""

from __future__ import annotations

from collections.abc import Hashable

from scotbed.filters import Attributes, Filter


class NaiveMatcher:
    def __init__(self) -> None:
        self._filters: dict[Hashable, Filter] = {}

    def add(self, key: Hashable, flt: Filter) -> None:
        self._filters[key] = flt

    def remove(self, key: Hashable) -> bool:
        return self._filters.pop(key, None) is not None

    def match(self, attrs: Attributes) -> list[Hashable]:
        return [k for k, f in self._filters.items() if f.matches(attrs)]

    def __len__(self) -> int:
        return len(self._filters)

    def __contains__(self, key: object) -> bool:
        return key in self._filters
