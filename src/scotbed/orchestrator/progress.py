"""Progress of a run: one line per phase, with a live spinner on a terminal.

Three reporters behind one interface: ``RichProgress`` for people (a spinner
with live counts, then a line with the phase's duration; a line is never
wrapped into two, so output sent to a file reads as printed), ``JsonProgress``
for CI and scripts (``--log-json``: one JSON object a line on stderr, Python's
warnings and log records included), and ``QuietProgress`` (``--quiet``:
warnings and errors only). Text is printed as given: no markup is read in it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from scotbed.terminal import emit_json, log_as_json


class Phase(Protocol):
    def update(self, text: str) -> None: ...


class Progress(Protocol):
    def phase(self, name: str) -> Any: ...  # a context manager yielding a Phase
    def info(self, text: str) -> None: ...
    def warn(self, text: str) -> None: ...
    def error(self, text: str) -> None: ...


class _NullPhase:
    def update(self, text: str) -> None:
        pass


class QuietProgress:
    @contextmanager
    def phase(self, name: str) -> Iterator[Phase]:
        yield _NullPhase()

    def info(self, text: str) -> None:
        pass

    def warn(self, text: str) -> None:
        print(f"warning: {text}", file=sys.stderr)

    def error(self, text: str) -> None:
        print(text, file=sys.stderr)


class JsonProgress:
    def __init__(self) -> None:
        log_as_json()

    def _emit(self, **fields: Any) -> None:
        emit_json(**fields)

    @contextmanager
    def phase(self, name: str) -> Iterator[Phase]:
        emit = self._emit
        t0 = time.monotonic()
        last: dict[str, str] = {"text": ""}

        class _P:
            def update(self, text: str) -> None:
                last["text"] = text

        emit(event="phase_start", phase=name)
        try:
            yield _P()
        except BaseException as e:
            emit(event="phase_failed", phase=name, seconds=round(time.monotonic() - t0, 3), error=str(e))
            raise
        emit(event="phase_done", phase=name, seconds=round(time.monotonic() - t0, 3), detail=last["text"])

    def info(self, text: str) -> None:
        self._emit(event="info", text=text)

    def warn(self, text: str) -> None:
        self._emit(event="warning", text=text)

    def error(self, text: str) -> None:
        self._emit(event="error", text=text)


class RichProgress:
    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False, soft_wrap=True)

    @contextmanager
    def phase(self, name: str) -> Iterator[Phase]:
        from rich.markup import escape

        t0 = time.monotonic()
        last = {"text": ""}
        with self.console.status(f"[bold]{name}[/]") as status:

            class _P:
                def update(self, text: str) -> None:
                    last["text"] = text
                    status.update(f"[bold]{name}[/] {escape(text)}")

            try:
                yield _P()
            except BaseException:
                self.console.print(f"[red]✗[/] {name} ({time.monotonic() - t0:.1f}s) {escape(last['text'])}")
                raise
        self.console.print(f"[green]✓[/] {name} ({time.monotonic() - t0:.1f}s) {escape(last['text'])}")

    def info(self, text: str) -> None:
        self.console.print(text, markup=False)

    def warn(self, text: str) -> None:
        from rich.markup import escape

        self.console.print(f"[yellow]warning:[/] {escape(text)}")

    def error(self, text: str) -> None:
        self.console.print(text, markup=False)


def make_progress(quiet: bool = False, log_json: bool = False) -> Progress:
    if log_json:
        return JsonProgress()
    if quiet:
        return QuietProgress()
    return RichProgress()
