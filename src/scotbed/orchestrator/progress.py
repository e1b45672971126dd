"""Progress of a run: one line per phase, with a live spinner on a terminal.

Three reporters behind one interface: ``RichProgress`` for people (a spinner
with live counts, then a line with the phase's duration; a line is never
wrapped into two, so output sent to a file reads as printed), ``JsonProgress``
for CI and scripts (``--log-json``: one JSON object a line on stderr, Python's
warnings and log records included), and ``QuietProgress`` (``--quiet``:
warnings and errors only). Text is printed as given: no markup is read in it.

Live figures. A phase may also report figures while it runs (:meth:`Phase.live`: their text and
fields; the publish phase's come from :mod:`scotbed.orchestrator.livestats`). On a terminal they
replace the spinner's text as they come; to a file or a pipe they are a plain line every
:data:`PLAIN_EVERY_S`, and under ``--log-json`` a ``progress`` event as often; ``--quiet`` shows
none, and says so (``shows_live``), so the run does not gather them at all.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

from scotbed.terminal import emit_json, log_as_json

PLAIN_EVERY_S = 2.0  # between two plain (or JSON) lines of live figures; Locust's console stats' period


class Phase(Protocol):
    def update(self, text: str) -> None: ...
    def live(self, text: str, fields: Mapping[str, Any]) -> None: ...


class Every:
    """Due at most once per ``period_s``, the first time one period after it was made."""

    def __init__(self, period_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.period_s = period_s
        self.clock = clock
        self._next = clock() + period_s

    def due(self) -> bool:
        now = self.clock()
        if now < self._next:
            return False
        self._next = now + self.period_s
        return True


class Progress(Protocol):
    shows_live: bool  # False: a phase's live figures are not shown, so need not be gathered

    def phase(self, name: str) -> Any: ...  # a context manager yielding a Phase
    def info(self, text: str) -> None: ...
    def warn(self, text: str) -> None: ...
    def error(self, text: str) -> None: ...


class _NullPhase:
    def update(self, text: str) -> None:
        pass

    def live(self, text: str, fields: Mapping[str, Any]) -> None:
        pass


class QuietProgress:
    shows_live = False

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
    shows_live = True

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        log_as_json()

    def _emit(self, **fields: Any) -> None:
        emit_json(**fields)

    @contextmanager
    def phase(self, name: str) -> Iterator[Phase]:
        emit = self._emit
        t0 = time.monotonic()
        last: dict[str, str] = {"text": ""}
        every = Every(PLAIN_EVERY_S, self.clock)

        class _P:
            def update(self, text: str) -> None:
                last["text"] = text

            def live(self, text: str, fields: Mapping[str, Any]) -> None:
                if every.due():
                    emit(event="progress", phase=name, **fields)

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
    shows_live = True

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False, soft_wrap=True)
        self.clock = clock

    @contextmanager
    def phase(self, name: str) -> Iterator[Phase]:
        from rich.markup import escape

        t0 = time.monotonic()
        last = {"text": ""}
        held = {"live": False}  # live figures, once shown, keep the spinner's line
        every = Every(PLAIN_EVERY_S, self.clock)
        console = self.console
        with console.status(f"[bold]{name}[/]") as status:

            class _P:
                def update(self, text: str) -> None:
                    last["text"] = text
                    if not held["live"]:
                        status.update(f"[bold]{name}[/] {escape(text)}")

                def live(self, text: str, fields: Mapping[str, Any]) -> None:
                    if console.is_terminal:
                        held["live"] = True
                        status.update(f"[bold]{name}[/] {escape(text)}")
                    elif every.due():
                        console.print(f"… {name} ({time.monotonic() - t0:.1f}s) {escape(text)}")

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
