"""A PST annotated with trit vectors over a broker's links: Gryphon's link matching engine.

Why: a broker on the path of a notification only needs to know which of its links lead to a matching
subscriber, not which subscriptions match; the trits let a search stop as soon as every link is decided.

Every stored filter carries the bit of one link (a neighbour or LOCAL). A trit vector is two bitmasks over
the links, ``yes`` and ``maybe`` (a link in neither is No). ``annot(v)`` (docs/readings.md) is the parallel
combination of

- own(v): Yes for a link with a filter stored at ``v`` without residual tests, Maybe for a link whose
  filters stored at ``v`` all have residual tests;
- the alternative combination of the conditional (``=`` and ``prefix``) children and the implicit all-No
  child - never Yes, Maybe where any of them is not No (an event may follow none of them);
- the annotation of the ``'*'`` child (always followed).

Annotations are cached per node and invalidated along every changed path (the PST does that); they are
refreshed lazily, bottom-up through the stale nodes only, at the next search. A search (:meth:`links`)
starts from an initialisation mask of Maybe links and returns the Yes links: at each node the mask's
Maybes take the node's trits, residual-passing filters turn their link to Yes, the followed children are
searched with the remaining Maybes, and the search stops when none is left (remaining Maybes are No).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import chain

from scotbed.filters import Attributes, Filter
from scotbed.matching.pst import Node, PstMatcher

Trits = tuple[int, int]  # (yes, maybe) bitmasks over the links


def trit_string(t: Trits, width: int) -> str:
    """``YNM...`` for the first ``width`` links (the slides' notation; link 0 first)."""
    yes, maybe = t
    return "".join("Y" if yes >> i & 1 else "M" if maybe >> i & 1 else "N" for i in range(width))


class TritPst(PstMatcher):
    """The PST with per-node trit vectors; filters are added with the bit of their link."""

    def __init__(self, order: Sequence[str] | None = None) -> None:
        super().__init__(order)
        self._bit: dict[Hashable, int] = {}

    def add_link_filter(self, key: Hashable, flt: Filter, link_bit: int) -> None:
        self.remove(key)
        self._bit[key] = link_bit
        self.add(key, flt)

    def remove(self, key: Hashable) -> bool:
        removed = super().remove(key)
        self._bit.pop(key, None)
        return removed

    def annotation(self, node: Node) -> Trits:
        """``annot(node)``, recomputed through stale descendants only."""
        ann: Trits | None = node.ann
        if ann is not None:
            return ann
        yes = maybe = cond = 0
        bit = self._bit
        for key, residual in node.subs.items():
            if residual:
                maybe |= bit[key]
            else:
                yes |= bit[key]
        for child in chain(node.eq.values(), node.pre.values()):
            cy, cm = self.annotation(child)
            cond |= cy | cm
        if node.star is not None:
            sy, sm = self.annotation(node.star)
            yes |= sy
            maybe |= sm
        ann = (yes, (maybe | cond) & ~yes)
        node.ann = ann
        return ann

    def links(self, attrs: Attributes, mask: int) -> int:
        """The Yes links for ``attrs`` among the Maybe links of ``mask``; counts ``last_steps``."""
        self._maybe_reorder()
        self.annotation(self._root)
        order, bit = self._order, self._bit
        levels = len(order)
        steps = 0

        def search(node: Node, level: int, want: int) -> int:
            nonlocal steps
            steps += 1
            y, m = node.ann
            yes = want & y
            want &= m
            if not want:
                return yes
            bucket = node.compiled()
            if node.subs:
                hits: list[Hashable] = []
                bucket.collect(attrs, hits, plain=False)
                for key in hits:
                    b = bit[key]
                    if b & want:
                        yes |= b
                        want &= ~b
                if not want:
                    return yes
            if level < levels:
                for child in node.children(attrs, order[level]):
                    found = search(child, level + 1, want)
                    yes |= found
                    want &= ~found
                    if not want:
                        return yes
                if node.jump is not None:
                    yes |= search(node.jump, level + node.skip, want)
            return yes

        found = search(self._root, 0, mask) if mask else 0
        self.last_steps = steps
        return found
