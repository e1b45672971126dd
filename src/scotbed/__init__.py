"""scotbed: a testbed for content-based publish/subscribe routing."""

__version__ = "0.1.0"
