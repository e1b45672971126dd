"""The ``scotbed`` command line (DESIGN §3).

Subcommands live in :mod:`scotbed.orchestrator.commands`, one module each
with ``add_parser(subparsers)``; to add one, write the module and list it in
:data:`COMMANDS`. A command module with ``run_argv(argv)`` gets its arguments unparsed
(for implementations that own their option parser). User errors (a wrong spec, a missing file, a command this
build lacks) print one message to stderr and exit 2; a traceback means a bug.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from scotbed.errors import UserError
from scotbed.orchestrator import interrupts
from scotbed.orchestrator.run import Terminated
from scotbed.orchestrator.spec import SpecError

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
]

#: exceptions that are the user's to fix (spec, topology, broker config, filter, command, host capacity):
#: message only, exit 2 (:mod:`scotbed.errors`)
USER_ERRORS: tuple[type[BaseException], ...] = (UserError,)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scotbed",
        description="Testbed for content-based publish/subscribe routing on SCOT and tree overlays",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"scotbed.orchestrator.commands.{name}").add_parser(sub)
    return parser


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
        args = argparse.Namespace(command=argv[0], handler=lambda _: run_argv(argv[1:]))
    else:
        args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except SpecError as e:
        if len(e.problems) == 1:
            print(f"scotbed {args.command}: error: {e.problems[0]}", file=sys.stderr)
        else:
            lines = "".join(f"\n  - {p}" for p in e.problems)
            print(
                f"scotbed {args.command}: error: {len(e.problems)} problems in the spec:{lines}",
                file=sys.stderr,
            )
        return 2
    except USER_ERRORS as e:
        print(f"scotbed {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"scotbed {args.command}: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print(f"scotbed {args.command}: terminated (SIGTERM)", file=sys.stderr)
        return 143
    except Exception as e:
        code = interrupts.exit_code()  # an error while unwinding from a signal (Py4JError from Spark's stop)
        if code is not None:
            print(f"scotbed {args.command}: {interrupts.WORDS[code]}", file=sys.stderr)
            return code
        if isinstance(e, OSError):  # the host refused something mid-command (disk full, permissions)
            print(f"scotbed {args.command}: failed: {e}", file=sys.stderr)
            return 3
        raise


if __name__ == "__main__":
    sys.exit(main())
