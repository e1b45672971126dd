"""``scotbed topology SPEC [--json] [--draw FILE.png]``: the overlay a spec builds."""

from __future__ import annotations

import argparse
import json
from typing import Any

from scotbed.experiment.spec import build_scot
from scotbed.orchestrator.commands import add_spec_arguments, load


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("topology", help="show the overlay: counts, drawing")
    add_spec_arguments(p)
    p.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    p.add_argument("--full", action="store_true", help="print topology.json (brokers and links)")
    p.add_argument("--draw", metavar="FILE.png", help="draw clusters as layers and regions as columns")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    scot = build_scot(load(args))
    summary = scot.summary()
    if args.full:
        print(json.dumps(scot.to_json(), indent=1))
    elif args.json:
        print(json.dumps(summary))
    else:
        width = max(len(k) for k in summary)
        for key, value in summary.items():
            print(f"{key:<{width}}  {value}")
    if args.draw:
        from scotbed.analysis.plots_topology import draw

        out = draw(scot, args.draw)
        if not (args.json or args.full):
            print(f"{'drawing':<{width}}  {out}")
    return 0
