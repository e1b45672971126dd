"""The root of the errors scotbed raises on purpose.

:class:`UserError` is input the user must fix (a spec, a plan, a campaign, a broker config, a
filter, a topology file, a command line): the CLI prints its one-line message and exits 2. Any
other :class:`ScotbedError` is an operational failure (a backend, a launch, a workload). An
exception outside this tree is a bug and keeps its traceback.
"""

from __future__ import annotations

#: why a document whose nesting exhausts the parser's recursion is refused
TOO_DEEP = "nested too deeply to parse (arrays or objects inside each other without end)"


class ScotbedError(Exception):
    """Something scotbed could not do; the message names what and where."""


class UserError(ScotbedError, ValueError):
    """Bad input, named with its file or key path; exit code 2."""
