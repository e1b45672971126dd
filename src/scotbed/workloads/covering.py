"""The covering degree of a subscription set (``covers``/``implies`` live in :mod:`scotbed.filters`).

Covering degree, as the selective-pruning evaluation defines it: for a set of
subscriptions, a *root* is a subscription no other one covers; NRS(S), the new
root subscriptions an unsubscription of root S triggers, are the subscriptions
covered by S and by no other subscription of the set (covering is transitive,
so anything still covered after S leaves is covered by a remaining root). The
covering degree is the mean of |NRS(S)| over the roots: Σ_i |NRS(S_i)| / N_roots.
"""

from __future__ import annotations

from collections.abc import Sequence

from scotbed.filters import Filter, covers, implies

__all__ = ["covering_degree", "covers", "implies", "new_roots"]


def new_roots(filters: Sequence[Filter]) -> dict[int, list[int]]:
    """For each root (by index), the indices of NRS(root): what its unsubscription makes roots."""
    n = len(filters)
    attrs = [f.attributes() for f in filters]
    covered_by: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for j in range(n):
            if i != j and attrs[i] <= attrs[j] and covers(filters[i], filters[j]):
                covered_by[j].append(i)
    roots = [i for i in range(n) if not covered_by[i]]
    return {r: [j for j in range(n) if covered_by[j] == [r]] for r in roots}


def covering_degree(filters: Sequence[Filter]) -> float:
    """Σ |NRS(S)| / N_roots over the roots of ``filters`` (0 for an empty set)."""
    nrs = new_roots(filters)
    return sum(len(v) for v in nrs.values()) / len(nrs) if nrs else 0.0
