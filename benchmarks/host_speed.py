"""How steady is this host? The CPU time of one fixed piece of work, taken again and again.

    .venv/bin/python benchmarks/host_speed.py [--samples 40] [--gap 0.5] [--loops 2000000] [--json]

Each sample runs the same pure-Python loop and reads the CPU time (user + system) it took; the
process sleeps ``--gap`` s between samples. On a dedicated machine the samples agree within a few
per cent. On a virtual machine whose cores are shared with other guests they need not: the same work
costs more CPU time while the physical core is busy with someone else's. Every absolute figure the
other benchmarks and a run print moves with it, which is why they quote ratios measured side by side
in one session, alternated. Run it before a series of measurements, with nothing else running.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def sample_ms(loops: int) -> float:
    """CPU milliseconds of ``loops`` additions in a Python loop."""
    start = time.process_time()
    total = 0
    for i in range(loops):
        total += i
    return (time.process_time() - start) * 1000.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--gap", type=float, default=0.5, help="s asleep between two samples")
    ap.add_argument("--loops", type=int, default=2_000_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    start = time.monotonic()
    samples: list[tuple[float, float]] = []  # (s since start, CPU ms)
    for _ in range(args.samples):
        samples.append((time.monotonic() - start, sample_ms(args.loops)))
        time.sleep(args.gap)
    cpu = [ms for _, ms in samples]
    out = {
        "loops": args.loops,
        "samples": [[round(t, 2), round(ms, 1)] for t, ms in samples],
        "min_ms": round(min(cpu), 1),
        "median_ms": round(statistics.median(cpu), 1),
        "max_ms": round(max(cpu), 1),
        "max_over_min": round(max(cpu) / min(cpu), 2),
    }
    if args.json:
        print(json.dumps(out))
        return
    print(f"{args.samples} samples of {args.loops:,} loop iterations, {args.gap:g} s apart; CPU ms each:")
    print("  " + " ".join(f"{ms:.0f}" for ms in cpu))
    spread = f"slowest / fastest {out['max_over_min']}"
    print(f"  min {out['min_ms']}, median {out['median_ms']}, max {out['max_ms']}; {spread}")


if __name__ == "__main__":
    main()
