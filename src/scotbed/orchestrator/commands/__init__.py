"""One module per ``scotbed`` subcommand; each has ``add_parser(subparsers)``, and a command that
parses its own options also has ``run_argv(argv) -> int``, which gets the arguments unparsed.

A command's handler is ``args.handler(args) -> int`` (the exit code). Commands
whose implementation lives elsewhere import it only when they run
(:func:`call_lazy`), so ``scotbed validate`` never loads grpc, Locust or Spark.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

from scotbed.errors import UserError
from scotbed.experiment.spec import Spec, load_spec


class CommandError(UserError):
    """A user-facing failure of a command: printed without a traceback, exit code 2."""


def add_spec_arguments(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """SPEC (optional when it has a ``default``) and the repeatable ``--set``."""
    if default is None:
        p.add_argument("spec", metavar="SPEC", help="experiment spec (YAML)")
    else:
        p.add_argument(
            "spec", nargs="?", default=default, metavar="SPEC", help=f"experiment spec (default {default})"
        )
    p.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override a spec value (YAML scalar), e.g. --set workload.subscribers=100; repeatable",
    )


def count_of(what: str) -> Callable[[str], int]:
    """An argparse type for a number of ``what``: a whole number >= 1, anything else refused by name."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = 0
        if n < 1:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {what} (a whole number >= 1)")
        return n

    return parse


def load(args: argparse.Namespace) -> Spec:
    return load_spec(args.spec, args.sets)


def call_lazy(command: str, module: str, args: Any, attr: str = "main") -> int:
    """Run ``module.main(args)`` (``args``: the parsed Namespace, or the raw argv list for commands
    that parse their own options); a build without that module fails with a clear message (exit 2)."""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is not None and (module == e.name or module.startswith(e.name + ".")):
            raise CommandError(
                f"'scotbed {command}' is not implemented yet in this build ({module} is missing)"
            ) from None
        raise
    handler: Callable[[Any], Any] = getattr(mod, attr)
    result = handler(args)
    return int(result or 0)
