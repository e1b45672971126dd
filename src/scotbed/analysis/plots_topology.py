"""A SCOT drawn as clusters × regions: ``scotbed topology --draw FILE.png`` and every run report.

Cluster C_i is horizontal layer i, region R_a is a column, so the product
structure is visible at a glance. Within a layer the tree is drawn as an arc
diagram: columns follow a walk out from a centre vertex (see
:func:`column_order`), aCOLs between neighbouring columns are straight and the
others arc above the layer. iCOLs join the layers of one column; those that
skip a layer are curved so each region's clique shows all its m(m-1)/2 links.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scotbed import topology as topo
from scotbed.analysis import plots

LABEL_FONT = 8  # broker ids: legible at the report's half-width plots
MAX_LABELLED = 120  # beyond this many brokers the ids are left off (they would overlap)


def column_order(factor: topo.AcyclicFactor) -> list[str]:
    """The factor's vertices left to right, walking out from a centre vertex: its larger subtrees
    alternate left and right, and in each subtree the root sits next to its parent with small
    subtrees close and large ones far, so a path is drawn in order and chains stay short."""
    adj = factor.adjacency
    ecc = {v: max(factor.distances(v).values()) for v in factor.vertices}
    root = min(factor.vertices, key=lambda v: (ecc[v], factor.vertices.index(v)))
    size: dict[str, int] = {}

    def count(v: str, parent: str | None) -> int:
        size[v] = 1 + sum(count(c, v) for c in adj[v] if c != parent)
        return size[v]

    count(root, None)

    def subtree(v: str, parent: str, left: bool) -> list[str]:
        children = sorted((c for c in adj[v] if c != parent), key=lambda c: size[c])
        if left:
            return [x for c in reversed(children) for x in subtree(c, v, True)] + [v]
        return [v] + [x for c in children for x in subtree(c, v, False)]

    children = sorted(adj[root], key=lambda c: -size[c])
    left, right = children[0::2], children[1::2]
    order = (
        [x for c in left for x in subtree(c, root, True)]
        + [root]
        + [x for c in reversed(right) for x in subtree(c, root, False)]
    )
    if order.index(factor.vertices[0]) > len(order) // 2:
        order.reverse()  # keep the factor's first vertex on the left (a-f reads a to f)
    return order


def scot_of(doc: Mapping[str, Any]) -> topo.Scot | None:
    """The SCOT a run's ``topology.json`` describes (None for a document without a factor: peers)."""
    factor = doc.get("factor")
    if not isinstance(factor, Mapping) or not factor.get("vertices"):
        return None
    edges = tuple((str(u), str(v)) for u, v in factor.get("edges", []))
    acyclic = topo.AcyclicFactor(str(doc.get("acyclic", "factor")), tuple(factor["vertices"]), edges)
    return topo.Scot(acyclic, int(doc.get("connectivity", 1) or 1))


def layout(scot: topo.Scot) -> dict[str, tuple[float, float]]:
    """Broker id -> (x, y): x is the region's column, y the cluster's layer (cluster 0 on top)."""
    col = {v: k for k, v in enumerate(column_order(scot.factor))}
    return {b.id: (float(col[b.vertex]), float(-b.cluster)) for b in scot.brokers}


def draw(scot: topo.Scot, path: str | Path, title: str | None = None) -> Path:
    """Write a PNG of ``scot`` to ``path``."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch

    pos = layout(scot)
    n_cols = len(scot.factor.vertices)
    size = (max(6.0, 0.8 * n_cols + 2.5), max(3.0, 1.3 * scot.m + 1.5))
    fig, ax = plt.subplots(figsize=size, layout="constrained")
    styles = {topo.ACOL: ("tab:blue", 1.8, "-"), topo.ICOL: ("tab:orange", 1.2, "--")}
    for link in scot.links:
        (xa, ya), (xb, yb) = pos[link.a], pos[link.b]
        if link.kind == topo.ACOL:
            span = abs(xb - xa)
            rad = 0.0 if span <= 1 else (-0.2 if xa < xb else 0.2)
        else:
            span = abs(yb - ya)
            rad = 0.12 * (span - 1) / span  # bulge grows gently with the layers skipped
        colour, width, dash = styles[link.kind]
        ax.add_patch(
            FancyArrowPatch(
                (xa, ya),
                (xb, yb),
                arrowstyle="-",
                connectionstyle=f"arc3,rad={rad}",
                shrinkA=6,
                shrinkB=6,
                zorder=1,
                color=colour,
                linewidth=width,
                linestyle=dash,
            )
        )
    for kind, marker, colour in (("edge", "s", "white"), ("inner", "o", "tab:gray")):
        pts = [pos[b.id] for b in scot.brokers if b.type == kind]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.scatter(xs, ys, s=90, marker=marker, c=colour, edgecolors="black", zorder=3)
    if len(scot.brokers) <= MAX_LABELLED:
        for b in scot.brokers:
            x, y = pos[b.id]
            ax.annotate(
                b.id, (x, y), xytext=(0, -14), textcoords="offset points", ha="center", fontsize=LABEL_FONT
            )
    order = column_order(scot.factor)
    ax.set_xticks(
        range(n_cols), [f"R_{v}" for v in order], fontsize=LABEL_FONT, rotation=90 if n_cols > 20 else 0
    )
    ax.set_yticks([-i for i in range(scot.m)], [f"C_{i}" for i in range(scot.m)])
    ax.set_xlim(-0.8, n_cols - 0.2)
    ax.set_ylim(-scot.m + 0.3, 0.9)
    ax.set_xlabel("regions (G_C fibres)")
    ax.set_ylabel("clusters (G_A fibres)")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    s = scot.summary()
    ax.set_title(
        title
        or f"{s['kind']} {s['acyclic']} × K{scot.m}: {s['brokers']} brokers, "
        f"{s['acols']} aCOLs, {s['icols']} iCOLs, diameter {s['diameter']}",
        fontsize=10,
    )
    handles = [
        Line2D([], [], color=styles[topo.ACOL][0], linewidth=1.8, linestyle="-", label="aCOL"),
        Line2D([], [], color=styles[topo.ICOL][0], linewidth=1.2, linestyle="--", label="iCOL"),
    ]
    for mark, face, label in (("s", "white", "edge broker"), ("o", "tab:gray", "inner broker")):
        handles.append(
            Line2D(
                [],
                [],
                marker=mark,
                color="none",
                markerfacecolor=face,
                markeredgecolor="black",
                label=label,
            )
        )
    fig.legend(handles=handles, loc="outside right upper", fontsize=LABEL_FONT, frameon=False)
    return plots.save_laid_out(fig, Path(path))
