"""Optional Prometheus endpoint; off unless ``prometheus_port`` is set in the broker config.

Exposes queue lengths (input and per link), the broker's message counters and
a histogram of matching time, every series labelled with the broker id.
Gauges and counters are refreshed from the broker's own state at each sample,
so the hot path pays only for the histogram observation. A spec switches it on
with ``metrics: {prometheus: true}``: containers serve it on :data:`PORT`,
local brokers on a port the launcher reserves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scotbed.broker.runtime import Broker
    from scotbed.config import BrokerConfig

#: the container port of the endpoint (compose services, Kubernetes pods), named ``metrics``
PORT = 9464
#: the HTTP path Prometheus scrapes
PATH = "/metrics"


def addresses(configs: Iterable[BrokerConfig], dial: Mapping[str, str]) -> dict[str, str]:
    """{broker id: host:port of its endpoint}: the host the broker is dialled at (``dial``, id ->
    host:port) with the config's ``prometheus_port``; brokers without an endpoint are left out."""
    return {
        c.id: f"{dial[c.id].rpartition(':')[0]}:{c.prometheus_port}"
        for c in configs
        if c.prometheus_port is not None
    }


MATCH_BUCKETS_US = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000)


class Metrics:
    def __init__(self, broker: Broker, port: int, host: str = "0.0.0.0") -> None:
        from prometheus_client import CollectorRegistry, Gauge, Histogram, start_http_server

        self.broker = broker
        self.registry = CollectorRegistry()
        labels = {"broker": broker.id}
        self._const = labels
        self.input_len = Gauge(
            "scotbed_input_queue_len", "Input queue length", ["broker"], registry=self.registry
        )
        self.output_len = Gauge(
            "scotbed_output_queue_len",
            "Output queue length per link",
            ["broker", "link"],
            registry=self.registry,
        )
        self.ce = Gauge(
            "scotbed_link_ce", "Congestion element In/Out", ["broker", "link"], registry=self.registry
        )
        self.messages = Gauge(
            "scotbed_messages", "Broker message counters", ["broker", "counter"], registry=self.registry
        )
        self.match_us = Histogram(
            "scotbed_match_us",
            "Matching time (µs)",
            ["broker"],
            buckets=MATCH_BUCKETS_US,
            registry=self.registry,
        )
        self._match = self.match_us.labels(**labels)
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        self.address = f"{host}:{self._server.server_port}"  # the bound port, also when ``port`` was 0
        broker.match_observer = self._match.observe

    def close(self) -> None:
        self._server.shutdown()
        self.broker.match_observer = None

    def refresh(self) -> None:
        b = self.broker
        self.input_len.labels(b.id).set(b.input.qsize())
        for link in b.links.values():
            self.output_len.labels(b.id, link.id).set(len(link.queue))
            self.ce.labels(b.id, link.id).set(link.ce)
        for name, value in b.counters.items():
            self.messages.labels(b.id, name).set(value)

    async def run(self, period_s: float = 1.0) -> None:
        while True:
            self.refresh()
            await asyncio.sleep(period_s)
