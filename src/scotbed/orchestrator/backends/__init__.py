"""Where brokers run: one module per backend (local processes, docker compose, Kubernetes)."""
