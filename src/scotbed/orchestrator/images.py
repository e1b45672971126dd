"""The container image tags a run uses by default, one home for both (the Makefile's ``IMAGE`` is the
same ``scotbed-broker:<version>``)."""

from __future__ import annotations

from scotbed import __version__

#: the broker image (broker-image/Dockerfile, ``make image``)
BROKER_IMAGE = f"scotbed-broker:{__version__}"
#: the broker image with the workloads extra, for the Locust Jobs on Kubernetes
#: (``make image EXTRAS=broker,workloads``)
WORKLOAD_IMAGE = f"scotbed-workloads:{__version__}"
