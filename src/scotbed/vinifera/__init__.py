"""Vinifera peers (docs/design.md §10): pure peer logic, one message-in/messages-out state machine per peer.

The core modules do no I/O: the round simulator (:mod:`.sim`) and a gRPC peer process
(:mod:`.process`) drive the same :class:`~scotbed.vinifera.peer.Peer` objects. :mod:`.run` is
``scotbed run`` of a peers spec, :mod:`.analysis` its ``peers`` section of summary.json. The core
imports none of them (an import-linter contract in pyproject.toml).
"""
