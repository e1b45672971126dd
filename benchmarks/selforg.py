"""Cost over time of the self-organising tree heuristics at paper scale, in the simulator.

    python benchmarks/selforg.py [--alpha 0.2 0.5 0.8] [--duration 15000] [--rate 0.02] [--seed 1]

The paper's setup (§5): 100 brokers, 50 notification types with one publisher broker and 9
subscriber brokers each (picked by per-broker load values), subscriptions replaced after an
exponential lifetime (rate 0.0004), η = 4, broadcasts every 250 ticks, caches of 8192 ids, Bloom
filters of 100,000 bits and 5 hashes. Link costs are uniform in [0, (1 − α)·Γ] and broker costs in
[0, α·Γ], Γ = 20 (§5.3); all link costs are redrawn at 1/3 of the run and all broker costs at 2/3
(§5.1). Every heuristic runs on the same random tree, costs, workload and redraws, driven by
scotbed.selforg.paper (which the reproduction rows ci-paper-alpha-* compute). The default
publication rate is a tenth of the paper's so a run takes minutes here, and the unsubscription rate
a tenth too, which keeps the paper's ~50 notifications per subscription.

Printed per α: the delivery cost per notification (Eq. 1 averaged) per bucket of publication
time, the mean publication-to-delivery delay and its 99th percentile (parking adds to it), the
heuristic's own message cost (broadcasts, requests, NEWVER floods, END waves), the swap count and
whether every notification reached each of its subscribers exactly once.
"""

from __future__ import annotations

import argparse
import statistics
import time

from scotbed.selforg.heuristics import HEURISTICS
from scotbed.selforg.paper import Evaluation, per_notification, runs
from scotbed.selforg.sim import NOTIFY, OVERHEAD


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", type=float, nargs="+", default=[0.2, 0.5, 0.8])
    ap.add_argument("--duration", type=float, default=15_000)
    ap.add_argument("--bucket", type=float, default=1000)
    ap.add_argument("--rate", type=float, default=0.02, help="publications per tick per type")
    ap.add_argument("--unsubscribe-rate", type=float, default=0.00004, help="per subscription per tick")
    ap.add_argument("--brokers", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    buckets = int(args.duration // args.bucket)
    for alpha in args.alpha:
        print(f"\nalpha = {alpha}  (delivery cost per notification, buckets of {args.bucket:g} ticks)")
        t0 = time.monotonic()
        done = runs(
            args.seed,
            (None, *HEURISTICS),
            Evaluation(
                alpha=alpha,
                duration=args.duration,
                rate=args.rate,
                unsubscribe_rate=args.unsubscribe_rate,
                brokers=args.brokers,
                bucket=args.bucket,
            ),
        )
        for label, run in done.items():
            out = run.outcome
            series = [per_notification(out, (NOTIFY,), range(b, b + 1)) for b in range(buckets)]
            overhead = sum(out.total(k) for k in OVERHEAD)
            wrong = sum(1 for k, n in out.delivered.items() if n != 1) + len(out.expected - out.delivered)
            print(
                f"{label:7s} mean {per_notification(out, (NOTIFY,)):7.1f}  "
                f"overhead/delivery {overhead / out.total(NOTIFY):6.3f}  swaps {len(out.swaps):4d}  "
                f"oracle {'ok' if wrong == 0 else f'{wrong} WRONG'}  "
                f"delay {statistics.fmean(out.delays):5.1f} "
                f"p99 {statistics.quantiles(out.delays, n=100)[98]:5.0f}  "
                + " ".join(f"{v:5.0f}" for v in series)
            )
        base = done["static"].outcome.total(NOTIFY)
        print(
            f"({time.monotonic() - t0:4.0f} s) delivery cost vs static: "
            + ", ".join(f"{k} {v.outcome.total(NOTIFY) / base:.3f}" for k, v in done.items())
        )


if __name__ == "__main__":
    main()
