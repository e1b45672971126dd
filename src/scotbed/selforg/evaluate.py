"""The CI heuristic's arithmetic (paper §4.1–4.2), pure functions of one broker's estimates.

Readings (``docs/readings.md``): Eq. 3's middle term is I_ij·(p_i + c_ik + p_k + c_kj + p_j); φ (Eq. 6)
is taken over N_η(i) including i with I_ii = I_i = |cache_i|; I_ikj = min(φ, I_ij, I_ik). Where Eq. 7
would divide by I_ij = 0 (a broker on the path that shares nothing with i) the factor is 1: the
path there is a plain relay.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scotbed.selforg.costs import Costs, Edge, edge


class MissingInterest(LookupError):
    """The broker has no estimate I_ix yet (no broadcast from x): it must wait (paper §4.3.1)."""


def phi(interest: Mapping[str, float], own: float) -> float:
    """Eq. 6 over N_η(i) = {i} ∪ interest's keys; 0 when i knows no other broker."""
    members = len(interest) + 1
    if members == 1:
        return 0.0
    return (sum(interest.values()) + own - own) / (members - 1)


def triple(phi_i: float, i_ij: float, i_ik: float) -> float:
    """I_ikj: what i, k and j all consume, bounded by each pair's estimate."""
    return min(phi_i, i_ij, i_ik)


def cost_current(
    i_ik: float, i_ij: float, i_ikj: float, p: Sequence[float], c_ik: float, c_kj: float
) -> float:
    """Eq. 3 (corrected): i's cost on the tree i–k–j; ``p`` = (p_i, p_k, p_j)."""
    p_i, p_k, p_j = p
    return i_ik * (p_i + c_ik + p_k) + i_ij * (p_i + c_ik + p_k + c_kj + p_j) - i_ikj * (p_i + c_ik + p_k)


def cost_direct(
    i_ik: float, i_ij: float, i_ikj: float, p: Sequence[float], c_ik: float, c_ij: float
) -> float:
    """Eq. 4: i's cost once i links to j directly (k stays i's neighbour)."""
    p_i, p_k, p_j = p
    return i_ik * (p_i + c_ik + p_k) + i_ij * (p_i + c_ij + p_j) - i_ikj * p_i


def threshold(i_ij: float, i_ikj: float, c_ik: float, p_k: float, c_kj: float) -> float:
    """Eq. 5's right side: i requests the link to j when c_ij is below it (needs I_ij > 0)."""
    return (i_ij - i_ikj) / i_ij * (c_ik + p_k) + c_kj


def known_interest(interest: Mapping[str, float], x: str) -> float:
    if x not in interest:
        raise MissingInterest(x)
    return interest[x]


def indirect_cost(path: Sequence[str], interest: Mapping[str, float], phi_i: float, costs: Costs) -> float:
    """Eq. 7: C_{i,j} along ``path`` = [i, …, k, j], folded hop by hop from i's side."""
    if len(path) == 1:
        return 0.0
    c = costs.link(path[0], path[1])
    for m in range(2, len(path)):
        k, x = path[m - 1], path[m]
        i_ix, i_ik = known_interest(interest, x), known_interest(interest, k)
        factor = (i_ix - triple(phi_i, i_ix, i_ik)) / i_ix if i_ix > 0 else 1.0
        c = factor * (c + costs.broker(k)) + costs.link(k, x)
    return c


def ring_edges(ring: Sequence[str]) -> list[Edge]:
    """The links of the reconfiguration cycle R given as its brokers in cycle order."""
    return [edge(ring[n], ring[(n + 1) % len(ring)]) for n in range(len(ring))]


def opened(ring: Sequence[str], cut: Edge) -> list[str]:
    """R without ``cut``: the cycle's brokers as a path, starting after the cut."""
    for n in range(len(ring)):
        if edge(ring[n], ring[(n + 1) % len(ring)]) == cut:
            return [ring[(n + 1 + t) % len(ring)] for t in range(len(ring))]
    raise ValueError(f"{cut} is not a link of the cycle {list(ring)}")


def cycle_costs(
    me: str, ring: Sequence[str], interest: Mapping[str, float], phi_i: float, costs: Costs
) -> dict[Edge, float]:
    """Eq. 8 for every e ∈ E_R: Σ_{x ∈ V_R} I_me,x · C_me,x on R without e, from me's estimates."""
    out = {}
    for cut in ring_edges(ring):
        line = opened(ring, cut)
        at = line.index(me)
        total = 0.0
        for n, x in enumerate(line):
            if x == me:
                continue
            path = line[at : n + 1] if n > at else line[n : at + 1][::-1]
            total += known_interest(interest, x) * indirect_cost(path, interest, phi_i, costs)
        out[cut] = total
    return out


def least(vector: Mapping[Edge, float], requested: Edge) -> Edge:
    """Eq. 10: the link whose removal costs least; a tie with the requested link keeps the tree."""
    best = min(vector.values())
    if vector[requested] == best:
        return requested
    return min(e for e, v in vector.items() if v == best)
