"""Covering between filters and the covering degree of a subscription set.

``covers(a, b)``: every notification that matches ``b`` matches ``a``. The
test here is syntactic and *sound*: it never claims a covering that does not
hold (a property test checks it against sampled notifications); it is
complete for filters with at most one predicate per attribute and the
interval/equality/prefix/exists predicates the workload generator builds.

Covering degree, as the selective-pruning evaluation defines it: for a set of
subscriptions, a *root* is a subscription no other one covers; NRS(S), the new
root subscriptions an unsubscription of root S triggers, are the subscriptions
covered by S and by no other subscription of the set (covering is transitive,
so anything still covered after S leaves is covered by a remaining root). The
covering degree is the mean of |NRS(S)| over the roots: Σ_i |NRS(S_i)| / N_roots.
"""

from __future__ import annotations

from collections.abc import Sequence

from scotbed.filters import Filter, Predicate

_INF = float("inf")


def _is_num(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _interval(p: Predicate) -> tuple[object, bool, object, bool] | None:
    """(lo, lo_closed, hi, hi_closed) for an interval predicate; None for others."""
    v = p.value
    if p.op == "=":
        return (v, True, v, True)
    if p.op == "between":
        return (v[0], True, v[1], True)
    if not _is_num(v):
        return None
    if p.op == "<":
        return (-_INF, False, v, False)
    if p.op == "<=":
        return (-_INF, False, v, True)
    if p.op == ">":
        return (v, False, _INF, False)
    if p.op == ">=":
        return (v, True, _INF, False)
    return None


def _same_kind(x: object, y: object) -> bool:
    return _is_num(x) == _is_num(y) or x in (-_INF, _INF) or y in (-_INF, _INF)


def implies(q: Predicate, p: Predicate) -> bool:
    """True when every attribute value that satisfies ``q`` satisfies ``p`` (same attribute)."""
    if q.attr != p.attr:
        return False
    if p.op == "exists":
        return True
    if q == p:
        return True
    if p.op == "prefix":
        if q.op == "prefix":
            return bool(q.value.startswith(p.value))
        return q.op == "=" and isinstance(q.value, str) and q.value.startswith(p.value)
    if p.op == "!=":
        iq = _interval(q)
        if iq is None:
            return q.op == "prefix" and (not isinstance(p.value, str) or not p.value.startswith(q.value))
        lo, lo_c, hi, hi_c = iq
        if not _same_kind(lo, p.value):
            return True
        return bool(
            p.value < lo or p.value > hi or (p.value == lo and not lo_c) or (p.value == hi and not hi_c)
        )
    ip, iq = _interval(p), _interval(q)
    if ip is None or iq is None:
        return False
    plo, plo_c, phi, phi_c = ip
    qlo, qlo_c, qhi, qhi_c = iq
    if not (_same_kind(plo, qlo) and _same_kind(phi, qhi) and _same_kind(plo, qhi)):
        return False
    lo_ok = plo < qlo or (plo == qlo and (plo_c or not qlo_c))  # type: ignore[operator]
    hi_ok = qhi < phi or (qhi == phi and (phi_c or not qhi_c))  # type: ignore[operator]
    return bool(lo_ok and hi_ok)


def covers(a: Filter, b: Filter) -> bool:
    """True when ``a`` covers ``b``: each predicate of ``a`` is implied by a predicate of ``b``."""
    return all(any(implies(q, p) for q in b.predicates if q.attr == p.attr) for p in a.predicates)


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
