"""What a finished run prints and the status it exits with.

The correctness verdict, the validity verdict (a warning when the run is host-bound), the report's
path; on stdout the report's path alone, or with ``--log-json`` one ``result`` JSON line holding it
and the exit status. With ``--require-valid`` a correct but host-bound run exits 5
(:func:`scotbed.analysis.validity.exit_status`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from scotbed.orchestrator.progress import Progress
from scotbed.terminal import emit_json


def finish(
    progress: Progress, verdict: str, summary: dict[str, Any], report: Path, status: int, options: Any
) -> int:
    """Print the outcome of a run whose correctness gave exit ``status``; return the exit status
    (``options``: the run's :class:`~scotbed.orchestrator.run.RunOptions`)."""
    from scotbed.analysis.validity import HOST_BOUND, exit_status, line

    progress.info(verdict)
    validity = summary.get("validity")
    if validity:
        (progress.warn if validity.get("verdict") == HOST_BOUND else progress.info)(line(validity))
    progress.info(f"report: {report}")
    code = exit_status(status, validity, options.require_valid)
    if options.log_json:
        emit_json(sys.stdout, event="result", exit_code=code, report=str(report))
    else:
        print(report)
    return code
