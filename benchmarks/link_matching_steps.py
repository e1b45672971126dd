"""Matching steps of link matching vs one centralised PST, by hop count (Gryphon's "matching time").

    python benchmarks/link_matching_steps.py [--subs 2000 4000 8000] [--brokers 7] [--events 200]

Prints, per subscription count, the centralised steps and link matching's cumulative steps by the number
of brokers the notification reached, as computed by :mod:`scotbed.analysis.link_matching_steps` (which
``scotbed reproduce link-matching-steps`` also runs).
"""

from __future__ import annotations

import argparse

from scotbed.analysis.link_matching_steps import steps_by_hops


def run(subs: int, brokers: int, events: int, seed: int) -> dict[str, float]:
    s = steps_by_hops(subs, brokers, events, seed)
    row: dict[str, float] = {"subscriptions": subs, "centralised": round(s.centralised, 1)}
    for hops, steps in s.link_matching.items():
        row[f"LM {hops + 1} broker(s)"] = round(steps, 1)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subs", type=int, nargs="+", default=[2000, 4000, 8000])
    ap.add_argument("--brokers", type=int, default=7)
    ap.add_argument("--events", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    for subs in args.subs:
        row = run(subs, args.brokers, args.events, args.seed)
        print("  ".join(f"{k}: {v:g}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
