"""What every ``scotbed`` command line shares on the terminal: help that shows each option's default,
and ``--log-json``'s JSON lines (Python's own warnings and log records among them).

Shared by the orchestrator's commands and the analysis's own parser (``scotbed analyze``), which
must not import the orchestrator.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import Any


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``(default: X)`` after an option's help, except where there is nothing to show (a flag, no
    default, an empty list) or the help already names the default."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, [], argparse.SUPPRESS) or "default" in text:
            return text
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` with :class:`HelpFormatter` unless told otherwise (also its subparsers)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def emit_json(stream: Any = None, **fields: Any) -> None:
    """One JSON line (with ``ts``, seconds since the epoch) on ``stream`` (default stderr)."""
    print(json.dumps({"ts": round(time.time(), 3), **fields}), file=stream or sys.stderr, flush=True)


class _JsonLogHandler(logging.Handler):
    """Python's log records (and, through ``logging.captureWarnings``, its warnings) as JSON lines."""

    def emit(self, record: logging.LogRecord) -> None:
        event = "warning" if record.levelno == logging.WARNING else record.levelname.lower()
        emit_json(event=event, text=record.getMessage(), logger=record.name)


def log_as_json() -> None:
    """From now on Python's warnings and log records (warning and above) reach stderr as JSON lines."""
    logging.captureWarnings(True)
    root = logging.getLogger()
    if not any(isinstance(h, _JsonLogHandler) for h in root.handlers):
        root.addHandler(_JsonLogHandler(logging.WARNING))
