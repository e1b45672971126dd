"""The publish phase's live view: the brokers asked in the background, their figures shown by the phase.

:func:`live_figures` starts a :class:`scotbed.broker.statuspoll.StatusPoller` for the phase and gives
the workload driver a callback for each look at the workload's status; the callback turns the latest
replies and that status into :mod:`.livestats` figures and hands them to the phase. A progress that
shows no figures (``--quiet``) gets no callback and no broker is asked. The poller stops when the
phase's ``with`` block ends, however it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from scotbed.orchestrator.progress import Phase, Progress

OnStatus = Callable[[Mapping[str, Any]], None]  # called with the workload's status document


@contextmanager
def live_figures(
    progress: Progress, ph: Phase, admin_addresses: Mapping[str, str], expected: int
) -> Iterator[OnStatus | None]:
    """``expected``: the notifications the plan publishes; ``admin_addresses``: broker id -> Admin."""
    if not progress.shows_live:
        yield None
        return
    from scotbed.broker.statuspoll import StatusPoller
    from scotbed.orchestrator.livestats import figures

    with StatusPoller(admin_addresses) as poller:

        def on_status(workload: Mapping[str, Any]) -> None:
            now = figures(poller.latest(), workload, expected, len(admin_addresses))
            ph.live(now.text(), now.fields())

        yield on_status
