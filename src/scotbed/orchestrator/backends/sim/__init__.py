"""The sim backend: the spec's brokers, with the real routing plug-ins and matching engines, in virtual
time under the time model of docs/design.md §11 (``scotbed run SPEC --backend sim``)."""
