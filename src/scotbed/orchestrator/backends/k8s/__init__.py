"""The Kubernetes backend: everything scotbed does with a cluster, in one package.

- :mod:`.backend`: the backend and its deployment (one namespace per run, one Pod per broker);
- :mod:`.render`, :mod:`.render_peers`, :mod:`.render_tls`, :mod:`.placement`, :mod:`.versions`: the
  objects a run applies (brokers, peers, the TLS Secret, node pools, API-version differences), also
  written by ``scotbed render --target k8s``;
- :mod:`.api`, :mod:`.diagnose`, :mod:`.portforward`, :mod:`.transfer`: the API client bundle, why a
  pod is not Ready, port-forwards and files out of pods;
- :mod:`.jobs` (the workload as Jobs), :mod:`.faults` (the fault timeline on pods), :mod:`.peers`
  (Vinifera peers as pods).

The in-pod side of the workload (:mod:`scotbed.workloads.k8s`) stays with the workloads: it runs in
the Locust image, which has no orchestrator.
"""
