"""Which signal stopped a command, so an error raised while unwinding from it keeps its exit code.

A SIGTERM that lands inside a Spark call unwinds through ``SparkSession.stop``,
which then fails with a ``Py4JError`` that replaces the signal's exception;
the command must still exit 143 (130 for Ctrl-C), not 1 with a traceback.
"""

from __future__ import annotations

import signal

_received: list[int] = []

EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
WORDS = {130: "interrupted", 143: "terminated (SIGTERM)"}


def note(signum: int) -> None:
    _received.append(signum)


def exit_code() -> int | None:
    """130 or 143 when SIGINT or SIGTERM arrived during this process; None otherwise."""
    return EXIT_CODES.get(signal.Signals(_received[-1])) if _received else None
