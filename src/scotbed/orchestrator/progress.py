"""Progress of a run: one line per phase, with a live spinner on a terminal.

Three reporters behind one interface: ``RichProgress`` for people (a spinner
with live counts, then a line with the phase's duration), ``JsonProgress``
for CI and scripts (``--log-json``: one JSON object a line on stderr), and
``QuietProgress`` (``--quiet``: warnings and errors only).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol


class Phase(Protocol):
    def update(self, text: str) -> None: ...


class Progress(Protocol):
    def phase(self, name: str) -> Any: ...  # a context manager yielding a Phase
    def info(self, text: str) -> None: ...
    def warn(self, text: str) -> None: ...


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


class JsonProgress:
    def _emit(self, **fields: Any) -> None:
        print(json.dumps({"ts": round(time.time(), 3), **fields}), file=sys.stderr, flush=True)

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


class RichProgress:
    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False)

    @contextmanager
    def phase(self, name: str) -> Iterator[Phase]:
        t0 = time.monotonic()
        last = {"text": ""}
        with self.console.status(f"[bold]{name}[/]") as status:

            class _P:
                def update(self, text: str) -> None:
                    last["text"] = text
                    status.update(f"[bold]{name}[/] {text}")

            try:
                yield _P()
            except BaseException:
                self.console.print(f"[red]✗[/] {name} ({time.monotonic() - t0:.1f}s) {last['text']}")
                raise
        self.console.print(f"[green]✓[/] {name} ({time.monotonic() - t0:.1f}s) {last['text']}")

    def info(self, text: str) -> None:
        self.console.print(text)

    def warn(self, text: str) -> None:
        self.console.print(f"[yellow]warning:[/] {text}")


def make_progress(quiet: bool = False, log_json: bool = False) -> Progress:
    if log_json:
        return JsonProgress()
    if quiet:
        return QuietProgress()
    return RichProgress()
