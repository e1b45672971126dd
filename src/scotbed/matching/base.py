"""The one interface every matching engine implements."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol, runtime_checkable

from scotbed.filters import Attributes, Filter


@runtime_checkable
class Matcher(Protocol):
    """An incremental index of filters under caller-chosen keys.

    ``add`` with a key already present replaces that key's filter.
    ``match`` returns the keys whose filters match ``attrs``, in no set order.
    """

    def add(self, key: Hashable, flt: Filter) -> None: ...

    def remove(self, key: Hashable) -> bool: ...

    def match(self, attrs: Attributes) -> list[Hashable]: ...

    def __len__(self) -> int: ...

    def __contains__(self, key: object) -> bool: ...
