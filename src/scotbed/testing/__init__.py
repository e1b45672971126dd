"""Test and benchmark support that ships with the package: synthesised run directories.

Nothing in the broker, the workloads, the analysis or the orchestrator imports this package.
"""
