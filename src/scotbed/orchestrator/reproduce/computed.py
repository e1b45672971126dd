"""Rows computed by a pure, deterministic function instead of broker runs (``computed:`` in rows.yaml).

A computation takes a seed and the row's parameters (its ``scale``, or ``scale`` then ``quick`` with
--quick, as ``key=value``) and returns one summary per series it computes, by name; the row's
``compare`` names the series it keeps, so its effects set two series of the same computation against
each other through the same verdicts as the broker rows. Repetition ``k`` uses seed ``seed + k`` (the
``seed`` parameter, 1 unless the row sets it). Adding a computation is one line in
:data:`.computations.COMPUTATIONS`.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from scotbed.orchestrator.reproduce.computations import COMPUTATIONS
from scotbed.orchestrator.reproduce.effects import metric
from scotbed.orchestrator.reproduce.record import RunFigures
from scotbed.orchestrator.reproduce.rows import Row, RowsError

Computation = Callable[..., dict[str, dict[str, Any]]]


def computation(name: str) -> Computation:
    module, function = COMPUTATIONS[name].split(":")
    fn: Computation = getattr(importlib.import_module(module), function)
    return fn


def source(name: str) -> Path:
    """The file of the computation's module (whose last commit the record keeps, as a spec file's)."""
    return Path(str(importlib.import_module(COMPUTATIONS[name].split(":")[0]).__file__))


def parameters(row: Row, quick: bool) -> dict[str, Any]:
    """The row's ``key=value`` parameters at that scale (a later one wins), values read as YAML."""
    out: dict[str, Any] = {"seed": 1}
    for item in row.sets(quick):
        key, sep, value = item.partition("=")
        if not sep:
            raise RowsError(f"row {row.name}: parameter {item!r}: give key=value")
        out[key] = yaml.safe_load(value)
    return out


def seeds(row: Row, quick: bool, repetitions: int) -> list[int]:
    first = int(parameters(row, quick)["seed"])
    return [first + k for k in range(repetitions)]


def cell(name: str, seed: int) -> str:
    return f"{name},seed={seed}"


def fingerprint(row: Row, quick: bool, seed: int) -> str:
    """What identifies a repetition's figures: the computation, its parameters and the seed."""
    what = {**parameters(row, quick), "seed": seed, "computed": row.computed}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def cell_fingerprints(row: Row, quick: bool, repetitions: int) -> dict[str, str]:
    """Each run's cell -> its fingerprint, as :func:`compute` records them."""
    return {
        cell(name, seed): fingerprint(row, quick, seed)
        for seed in seeds(row, quick, repetitions)
        for name in row.compare
    }


def compute(row: Row, quick: bool, repetitions: int) -> list[RunFigures]:
    """Every repetition's series named in ``compare``, one run each; a repetition's computing time is
    shared evenly by its series (one computation yields them all)."""
    assert row.computed is not None
    fn, given = computation(row.computed), parameters(row, quick)
    del given["seed"]
    try:
        inspect.signature(fn).bind(0, **given)
    except TypeError as e:
        raise RowsError(f"row {row.name}: computation {row.computed}: {e}") from None
    runs = []
    for k, seed in enumerate(seeds(row, quick, repetitions)):
        started = time.monotonic()
        series = fn(seed, **given)
        seconds = (time.monotonic() - started) / len(row.compare)
        missing = set(row.compare) - set(series)
        if missing:
            raise RowsError(f"row {row.name}: {row.computed} computes no {', '.join(sorted(missing))}")
        runs += [
            RunFigures(
                cell=cell(name, seed),
                compare=name,
                repetition=k,
                seconds=seconds,
                correct=None,
                validity="",
                spec_fingerprint=fingerprint(row, quick, seed),
                figures={e.metric: metric(series[name], e.metric) for e in row.effects},
            )
            for name in row.compare
        ]
    return runs
