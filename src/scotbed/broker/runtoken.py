"""The run token: a secret a caller of a broker's Admin (but ``Status``) and Link services must show.

Without TLS anyone who can reach a broker's port could otherwise reconfigure it (``Relink``,
``SetLinkLatency``, ...) or pose as a neighbour on ``Link.Connect`` with the run id, which is
no secret (it names the run directory). ``scotbed run`` draws a token per run
(:func:`new`), writes it into every broker's config (``run_token``) and names it in
:data:`ENV` for itself and the processes it starts; every Admin and Link call then carries it as
gRPC metadata (:data:`KEY`, :func:`metadata`), and a broker whose config has a token refuses a
call without it (``PERMISSION_DENIED``). ``Status`` stays open: the in-cluster workload polls it
for quiescence and carries no token. A config without a token (brokers started by hand or by
tests) checks nothing. The token is no substitute for TLS: in plaintext it crosses the wire in
the clear (docs/security.md).
"""

from __future__ import annotations

import hmac
import os
import secrets
from typing import Any

ENV = "SCOTBED_RUN_TOKEN"
KEY = "scotbed-run-token"  # gRPC metadata key (lower case, as gRPC requires)


def new() -> str:
    """A fresh token (256 random bits)."""
    return secrets.token_urlsafe(32)


def metadata(token: str | None = None) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying ``token`` (None: this process's, from :data:`ENV`); empty without one."""
    value = os.environ.get(ENV, "") if token is None else token
    return ((KEY, value),) if value else ()


def shown(context: Any) -> str:
    """The token a server-side call carries ("" when none)."""
    for key, value in context.invocation_metadata() or ():
        if key == KEY:
            return str(value)
    return ""


def admitted(expected: str, context: Any) -> bool:
    """Whether the call may go on: the broker has no token, or the caller shows it."""
    return not expected or hmac.compare_digest(shown(context).encode(), expected.encode())
