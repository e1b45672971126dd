"""Matching throughput per engine on stock-ticker subscriptions: events/s and the ratio to ``naive``.

    python benchmarks/matching.py --subs 1000 10000 100000 [--json] [--seconds 2]
    python benchmarks/matching.py --subs 10000 100000 --engines counting pst pst@70cf670
    python benchmarks/matching.py --from-run RUN_DIR --engines counting counting@REF

Subscriptions (10 attributes: symbol, exchange, open, high, low, close,
volume, change, change_pct, day; 500 symbols) are a mix a stock-ticker
subscriber writes: a symbol with a price band, a symbol with a minimum volume,
an exchange with a big move, a symbol prefix with a change band. Quotes are
random over the same 500 symbols. Every engine sees the same quotes and must
return the same match sets (checked on each measured event).

``ENGINE@REF`` (``pst``, ``counting``) measures that engine as it was at git revision REF in the same
run (``pst@70cf670``: before issue 14's rewrite). ``--from-run RUN_DIR`` takes the filters and the
notifications of a finished run's workload files instead (``workload/subscriptions.jsonl``,
``workload/publications.jsonl``): the table one broker holds under SNR, matched against what was
published. Targets for ``pst`` (issue 14): at 10k and 100k subscriptions at least 10x ``pst@70cf670``
and at least x0.5 counting.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import time
import types
from pathlib import Path
from typing import Any

from scotbed.filters import Filter, Predicate
from scotbed.matching import Matcher, make_matcher

SYMBOLS = [f"S{k:03d}{chr(65 + k % 26)}" for k in range(500)]
EXCHANGES = ["NYSE", "NASDAQ", "LSE", "TSE", "FWB"]


def subscription(rng: random.Random) -> Filter:
    sym = rng.choice(SYMBOLS)
    lo = round(rng.uniform(10, 190), 2)
    kind = rng.random()
    if kind < 0.4:
        preds = [Predicate("symbol", "=", sym), Predicate("close", "between", (lo, lo + rng.uniform(5, 40)))]
    elif kind < 0.65:
        preds = [Predicate("symbol", "=", sym), Predicate("volume", ">=", rng.randint(1_000, 900_000))]
    elif kind < 0.85:
        preds = [
            Predicate("exchange", "=", rng.choice(EXCHANGES)),
            Predicate("change_pct", ">", round(rng.uniform(2, 9), 2)),
            Predicate("day", "<=", rng.randint(1, 250)),
        ]
    else:
        preds = [Predicate("symbol", "prefix", sym[:3]), Predicate("change", "between", (-1.0, 1.0))]
    return Filter(tuple(preds))


def quote(rng: random.Random) -> dict[str, Any]:
    close = round(rng.uniform(10, 200), 2)
    change = round(rng.gauss(0, 2), 2)
    return {
        "symbol": rng.choice(SYMBOLS),
        "exchange": rng.choice(EXCHANGES),
        "open": round(close - change, 2),
        "high": round(close + abs(change), 2),
        "low": round(close - abs(change), 2),
        "close": close,
        "volume": rng.randint(0, 1_000_000),
        "change": change,
        "change_pct": round(100 * change / close, 2),
        "day": rng.randint(1, 250),
    }


def measure(
    engine: str, filters: list[Filter], events: list[dict[str, Any]], seconds: float
) -> dict[str, Any]:
    m = _engine(engine)
    t0 = time.perf_counter()
    for k, f in enumerate(filters):
        m.add(k, f)
    m.match(events[0])  # builds an index lazily, if the engine has one
    build_s = time.perf_counter() - t0
    n, matches, results = 0, 0, []
    t0 = time.perf_counter()
    while n < len(events) and (n < 3 or time.perf_counter() - t0 < seconds):
        r = m.match(events[n])
        results.append(sorted(r))  # type: ignore[type-var]
        matches += len(r)
        n += 1
    elapsed = time.perf_counter() - t0
    return {
        "engine": engine,
        "events": n,
        "events_per_s": n / elapsed,
        "build_s": build_s,
        "results": results,
    }


def generated(subs: int, seed: int) -> tuple[list[Filter], list[dict[str, Any]]]:
    rng = random.Random(seed)
    return [subscription(rng) for _ in range(subs)], [quote(rng) for _ in range(20_000)]


def from_run(run_dir: Path) -> tuple[list[Filter], list[dict[str, Any]]]:
    """The filters subscribed in a run (the last one per sub_id) and the attributes it published."""
    filters: dict[str, Filter] = {}
    with (run_dir / "workload" / "subscriptions.jsonl").open() as fh:
        for line in fh:
            rec = json.loads(line)
            if rec["op"] == "subscribe":
                filters[rec["sub_id"]] = Filter.from_json(rec["filter"])
    with (run_dir / "workload" / "publications.jsonl").open() as fh:
        events = [json.loads(line)["attrs"] for line, _ in zip(fh, range(20_000), strict=False)]
    return list(filters.values()), events


def run(
    filters: list[Filter], events: list[dict[str, Any]], engines: list[str], seconds: float
) -> dict[str, Any]:
    subs = len(filters)
    out: dict[str, Any] = {"subscriptions": subs, "engines": {}}
    base = None
    for engine in engines:
        r = measure(engine, filters, events, seconds)
        if base is None:
            base = r
        k = min(len(base["results"]), len(r["results"]))
        if r["results"][:k] != base["results"][:k]:
            raise SystemExit(f"{engine} disagrees with {base['engine']} at {subs} subscriptions")
        out["engines"][engine] = {
            "events_per_s": round(r["events_per_s"], 1),
            "events": r["events"],
            "build_s": round(r["build_s"], 3),
            "mean_matches": round(sum(map(len, base["results"][:k])) / max(1, k), 2),  # over common events
        }
    before = [name for name in out["engines"] if "@" in name]
    for base_name in ("naive", "counting", *before[:1]):
        rate = out["engines"].get(base_name, {}).get("events_per_s")
        for e in out["engines"].values():
            e[f"ratio_to_{base_name}"] = round(e["events_per_s"] / rate, 2) if rate else None
    return out


#: the engines ``ENGINE@REF`` can load from git: their module under scotbed/matching and class
AT_REF = {"pst": ("pst", "PstMatcher"), "counting": ("counting", "CountingMatcher")}


def _engine(name: str) -> Matcher:
    """An engine by name; ``ENGINE@REF`` is that engine as it was at git revision REF."""
    if "@" not in name:
        return make_matcher(name)
    engine, ref = name.split("@", 1)
    if engine not in AT_REF:
        raise SystemExit(f"ENGINE@REF: ENGINE is one of {', '.join(AT_REF)}, got {name!r}")
    module_name, class_name = AT_REF[engine]
    path = f"src/scotbed/matching/{module_name}.py"
    root = Path(__file__).resolve().parent.parent
    source = subprocess.run(
        ["git", "show", f"{ref}:{path}"], cwd=root, check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType(f"{engine}_at_{ref}")
    exec(compile(source, f"{ref}:{path}", "exec"), module.__dict__)  # our own history, by revision
    engine_: Matcher = getattr(module, class_name)()
    return engine_


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subs", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    ap.add_argument("--engines", nargs="+", default=["naive", "counting", "pst"])
    ap.add_argument("--seconds", type=float, default=2.0, help="measuring time per engine and size")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--from-run", type=Path, metavar="RUN_DIR", help="a run's filters and notifications")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    inputs = [from_run(args.from_run)] if args.from_run else [generated(n, args.seed) for n in args.subs]
    results = [run(filters, events, args.engines, args.seconds) for filters, events in inputs]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for r in results:
        for name, e in r["engines"].items():
            ratios = "  ".join(
                f"x{v} {k[len('ratio_to_') :]}" for k, v in e.items() if k.startswith("ratio_to_")
            )
            print(
                f"{r['subscriptions']:>7} subs  {name:<12} {e['events_per_s']:>10.1f} events/s  {ratios}  "
                f"build {e['build_s']:.2f} s  matches/event {e['mean_matches']}"
            )


if __name__ == "__main__":
    main()
