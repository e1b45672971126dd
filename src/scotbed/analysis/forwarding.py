"""Which forwarded copies of one notification were useful: pure graph logic, per publication.

A copy sent over link X→Y is *useful* when Y hosts a subscriber the
notification matches, or Y forwarded it on over a useful link. Anything else
is false-positive traffic: forwarded where nothing downstream matched. The
fixpoint handles cyclic overlays (SCOT) and dynamic copies alike.
"""

from __future__ import annotations

from collections.abc import Iterable


def useful_brokers(edges: Iterable[tuple[str, str]], interested: Iterable[str]) -> set[str]:
    """Brokers that host an interested subscriber or lead to one along the notification's own path."""
    es = list(edges)
    useful = set(interested)
    changed = True
    while changed:
        changed = False
        for src, dst in es:
            if dst in useful and src not in useful:
                useful.add(src)
                changed = True
    return useful


def false_positive_edges(
    edges: Iterable[tuple[str, str]], interested: Iterable[str]
) -> list[tuple[str, str]]:
    """The forwarded copies (src, dst) with nothing matching downstream, in input order."""
    es = list(edges)
    useful = useful_brokers(es, interested)
    return [(s, d) for s, d in es if d not in useful]
