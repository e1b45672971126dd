"""A stand-in for the Docker/compose CLI runner: scripted answers per command prefix, every call recorded."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scotbed.orchestrator.backends.docker_engine import Result

Handler = Callable[[list[str]], tuple[int, str, str]]


class ScriptedRunner:
    """Answers each command with the first handler whose prefix matches; records every call."""

    def __init__(self, handlers: list[tuple[list[str], Handler]]) -> None:
        self.handlers = handlers
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], *, timeout: float) -> Result:
        argv = list(argv)
        self.calls.append(argv)
        for prefix, handler in self.handlers:
            if argv[: len(prefix)] == prefix:
                rc, out, err = handler(argv)
                return Result(tuple(argv), rc, out, err)
        raise AssertionError(f"unexpected command {argv}")


def const(rc: int, out: str = "", err: str = "") -> Handler:
    return lambda _argv: (rc, out, err)
