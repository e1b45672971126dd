"""Vinifera peers (docs/design.md §10): pure peer logic, one message-in/messages-out state machine per peer.

Nothing here does I/O or imports the orchestrator: the round simulator (:mod:`scotbed.peers.sim`)
and a gRPC peer process drive the same :class:`~scotbed.peers.peer.Peer` objects.
"""
