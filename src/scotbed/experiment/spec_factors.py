"""The spec's acyclic factors (``topology.acyclic``) and the type of every spec key that names a file.

:mod:`scotbed.experiment.spec` builds its blocks on :class:`Block` and the topology block on
these factors. Every block is strict (unknown keys, ``true`` for a number and non-finite numbers
are errors), and each factor size is bounded by :data:`scotbed.bounds.MAX_BROKERS`. A file name
is refused with a NUL byte (no path can hold one) or empty. :func:`build` makes the factor a block
describes.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from scotbed import bounds
from scotbed import topology as topo
from scotbed.experiment.spec_errors import SpecError
from scotbed.loader import read_text


class Block(BaseModel):
    """The base of every spec block."""

    # strict: no bool -> int, no "3" -> 3; allow_inf_nan=False: every number is finite
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True, allow_inf_nan=False)


def _file_name(value: str) -> str:
    if "\0" in value:
        raise ValueError("a file name cannot contain a NUL byte")
    if not value:
        raise ValueError("a file name cannot be empty")
    return value


#: a spec key naming a file, relative to the spec file
FileName = Annotated[str, AfterValidator(_file_name)]


class NamedFactor(Block):
    """A named acyclic factor from the papers; written as a bare string (``acyclic: paper-fig2``)."""

    kind: Literal["paper-fig2", "paper-fig8", "paper-tiered", "paper-tiered-small"]  # topology.NAMED_FACTORS


class KaryFactor(Block):
    kind: Literal["kary"]
    fanout: int = Field(ge=1, le=bounds.MAX_BROKERS, description="children per inner vertex")
    depth: int = Field(ge=0, le=bounds.MAX_BROKERS, description="levels below the root (0 = one vertex)")


class PathFactor(Block):
    kind: Literal["path"]
    n: int = Field(ge=1, le=bounds.MAX_BROKERS, description="vertices")


class StarFactor(Block):
    kind: Literal["star"]
    n: int = Field(ge=1, le=bounds.MAX_BROKERS, description="vertices (one centre and n-1 leaves)")


class RandomFactor(Block):
    kind: Literal["random"]
    n: int = Field(ge=1, le=bounds.MAX_BROKERS, description="vertices")
    seed: int | None = Field(
        ge=0, le=bounds.MAX_SEED, default=None, description="tree seed; default: the spec's seed"
    )


class EdgesFactor(Block):
    kind: Literal["edges"]
    file: FileName = Field(description="edge-list file (`u v` per line), relative to the spec file")


class GraphmlFactor(Block):
    kind: Literal["graphml"]
    file: FileName = Field(description="GraphML file, relative to the spec file")


def _named_factor(value: Any) -> Any:
    return {"kind": value} if isinstance(value, str) else value


_FACTORS = (NamedFactor, KaryFactor, PathFactor, StarFactor, RandomFactor, EdgesFactor, GraphmlFactor)
ACYCLIC_KINDS: tuple[str, ...] = tuple(
    k for f in _FACTORS for k in typing.get_args(f.model_fields["kind"].annotation)
)

AcyclicSpec = Annotated[
    NamedFactor | KaryFactor | PathFactor | StarFactor | RandomFactor | EdgesFactor | GraphmlFactor,
    Field(discriminator="kind"),
    BeforeValidator(_named_factor),
]


def build(a: AcyclicSpec, seed: int, base_dir: Path) -> topo.AcyclicFactor:
    """The factor ``a`` describes: a ``random`` one drawn with ``seed`` unless it has its own, an
    ``edges`` or ``graphml`` one read from its file relative to ``base_dir``."""
    try:
        if isinstance(a, NamedFactor):
            return topo.NAMED_FACTORS[a.kind]()
        if isinstance(a, KaryFactor):
            return topo.kary(a.fanout, a.depth)
        if isinstance(a, PathFactor):
            return topo.path(a.n)
        if isinstance(a, StarFactor):
            return topo.star(a.n)
        if isinstance(a, RandomFactor):
            return topo.random_tree(a.n, seed if a.seed is None else a.seed)
        text, stem = _read(base_dir, a.file)
        if isinstance(a, EdgesFactor):
            return topo.from_edge_list(text, name=stem)
        return topo.from_graphml(text, name=stem)
    except topo.TopologyError as e:
        raise SpecError(f"topology.acyclic: {e}") from None


def _read(base_dir: Path, file: str) -> tuple[str, str]:
    path = (base_dir / file).resolve()
    try:
        return read_text(path, "topology", SpecError), path.stem
    except SpecError as e:
        raise SpecError(f"topology.acyclic.file: cannot read {e}") from None
