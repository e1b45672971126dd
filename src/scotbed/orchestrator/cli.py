"""The ``scotbed`` command line (docs/design.md §3).

Subcommands live in :mod:`scotbed.orchestrator.commands`, one module each
with ``add_parser(subparsers)``; to add one, write the module and list it in
:data:`COMMANDS`. A command module with ``run_argv(argv)`` gets its arguments unparsed
(for implementations that own their option parser). User errors (a wrong spec, a missing file, a command this
build lacks) print one message to stderr and exit 2; a traceback means a bug.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
from collections.abc import Callable, Sequence

from scotbed.errors import UserError
from scotbed.experiment.spec import SpecError
from scotbed.orchestrator import interrupts
from scotbed.orchestrator.run import Terminated
from scotbed.terminal import Parser, emit_json

#: subcommand modules under scotbed.orchestrator.commands, in help order
COMMANDS: list[str] = [
    "validate",
    "topology",
    "render",
    "run",
    "analyze",
    "campaign",
    "saturate",
    "down",
    "reproduce",
    "calibrate",
]

#: exceptions that are the user's to fix (spec, topology, broker config, filter, command, host capacity):
#: message only, exit 2 (:mod:`scotbed.errors`)
USER_ERRORS: tuple[type[BaseException], ...] = (UserError,)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="scotbed",
        description="Testbed for content-based publish/subscribe routing on SCOT and tree overlays",
    )
    parser.add_argument("--version", action="version", version=f"scotbed {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS:
        importlib.import_module(f"scotbed.orchestrator.commands.{name}").add_parser(sub)
    return parser


def version() -> str:
    """The installed package's version (its metadata), or why there is none."""
    try:
        return importlib.metadata.version("scotbed")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed: no package metadata)"


def _passthrough(name: str) -> Callable[[list[str]], int] | None:
    if name not in COMMANDS:
        return None
    run_argv: Callable[[list[str]], int] | None = getattr(
        importlib.import_module(f"scotbed.orchestrator.commands.{name}"), "run_argv", None
    )
    return run_argv


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    run_argv = _passthrough(argv[0]) if argv else None
    if run_argv is not None:
        args = argparse.Namespace(
            command=argv[0], handler=lambda _: run_argv(argv[1:]), log_json="--log-json" in argv
        )
    else:
        args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except SpecError as e:
        if len(e.problems) == 1:
            _error(args, f"scotbed {args.command}: error: {e.problems[0]}")
        else:
            lines = "".join(f"\n  - {p}" for p in e.problems)
            _error(args, f"scotbed {args.command}: error: {len(e.problems)} problems in the spec:{lines}")
        return 2
    except USER_ERRORS as e:
        _error(args, f"scotbed {args.command}: error: {e}")
        return 2
    except KeyboardInterrupt:
        _error(args, f"scotbed {args.command}: interrupted")
        return 130
    except Terminated:
        _error(args, f"scotbed {args.command}: terminated (SIGTERM)")
        return 143
    except Exception as e:
        code = interrupts.exit_code()  # an error while unwinding from a signal (Py4JError from Spark's stop)
        if code is not None:
            _error(args, f"scotbed {args.command}: {interrupts.WORDS[code]}")
            return code
        if isinstance(e, OSError):  # the host refused something mid-command (disk full, permissions)
            _error(args, f"scotbed {args.command}: failed: {e}")
            return 3
        raise


def _error(args: argparse.Namespace, text: str) -> None:
    """A command's failure on stderr: as given, or with ``--log-json`` as an ``error`` JSON line."""
    if getattr(args, "log_json", False):
        emit_json(event="error", text=text)
    else:
        print(text, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
