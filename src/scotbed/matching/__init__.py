"""Matching engines: given a notification, which stored filters match it.

Every engine gives identical match sets (tests prove it on random data); they
differ only in speed. Pick one by name with :func:`make_matcher`.
"""

from __future__ import annotations

from scotbed.matching.base import Matcher
from scotbed.matching.naive import NaiveMatcher

ENGINES: dict[str, str] = {
    "naive": "scotbed.matching.naive:NaiveMatcher",
    "counting": "scotbed.matching.counting:CountingMatcher",
    "pst": "scotbed.matching.pst:PstMatcher",
}


def implemented() -> list[str]:
    """The engine names this build can run (their module is present)."""
    import importlib.util

    return [n for n, t in ENGINES.items() if importlib.util.find_spec(t.split(":")[0]) is not None]


def make_matcher(name: str) -> Matcher:
    """A new, empty engine by its spec name (``naive``, ``counting``, ``pst``)."""
    import importlib

    try:
        target = ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown matching engine {name!r}; allowed: {', '.join(ENGINES)}") from None
    module, cls = target.split(":")
    engine: Matcher = getattr(importlib.import_module(module), cls)()
    return engine


__all__ = ["ENGINES", "Matcher", "NaiveMatcher", "implemented", "make_matcher"]
