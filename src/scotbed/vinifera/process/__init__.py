"""A Vinifera peer as a real process: one :class:`scotbed.vinifera.peer.Peer` state machine behind a gRPC
Peer service (the same logic the simulator drives), with its event log (docs/design.md §10)."""
