"""Upper bounds of what a spec or a campaign may ask for: the one home of these numbers.

``scotbed validate`` builds the whole overlay and generates the whole workload, so a count
written by mistake (``subscribers: 10000000000``) would keep it busy for hours or exhaust the
host's memory instead of failing. Each bound is well above what a run of this testbed can
hold and low enough that validating at the bound still ends. The spec model
(:mod:`scotbed.experiment.spec`), the campaign reader and the workload planner refuse a
value above its bound with a message naming the key and the bound; docs/faults-and-limits.md
lists them.
"""

from __future__ import annotations

#: brokers of an overlay (acyclic-factor vertices × clusters); also bounds each factor parameter
MAX_BROKERS = 5000
#: ``workload.subscribers`` (one subscription each, all calibrated while validating)
MAX_SUBSCRIBERS = 100_000
#: ``workload.publishers``
MAX_PUBLISHERS = 10_000
#: ``workload.notifications_per_publisher`` and ``workload.hrp.notifications``
MAX_NOTIFICATIONS = 1_000_000
#: ``workload.symbols`` (distinct 2-4 letter tickers of the synthetic market)
MAX_SYMBOLS = 10_000
#: unsubscribe/re-subscribe cycles ``workload.churn`` plans over the run
MAX_CHURN_CYCLES = 1_000_000
#: ``workload.gryphon.values`` (values per attribute) and ``subscriptions_per_client``
MAX_GRYPHON_VALUES = 10_000
MAX_GRYPHON_SUBSCRIPTIONS_PER_CLIENT = 1000
#: ``workload.time_scale``: rates are divided and delays multiplied by it
MIN_TIME_SCALE = 0.001
MAX_TIME_SCALE = 1000.0
#: ``repetitions`` of a campaign's cells
MAX_REPETITIONS = 1000
#: ``topology.self_organising``: ``cache_size`` (ids per cache), ``bloom_bits``, ``bloom_hashes``
MAX_INTEREST_CACHE = 1_000_000
MAX_BLOOM_BITS = 10_000_000
MAX_BLOOM_HASHES = 64
#: ``workload.peers``: ``warmup_rounds``, ``rounds`` and ``events_per_round``, and each
#: ``capacity``; ``topology.peers.id_space`` (the ring's size)
MAX_PEER_ROUNDS = 100_000
MAX_PEER_EVENTS_PER_ROUND = 100_000
MAX_PEER_ID_SPACE = 2**32
#: every duration, offset and timeout of a spec or a fault, in seconds (a week); a field in ms
#: (``interval_ms``, ``window_ms``, ``settle_ms``, ``period_ms``, ``cooldown_ms``) at most as long
MAX_SECONDS = 604_800
#: rates: a link's capacity in messages/s, and every ``rate_per_minute`` at most this many per second
MAX_RATE_PER_S = 1_000_000
#: ``brokers.service_us``, the processing time per message, in µs (one second)
MAX_SERVICE_US = 1_000_000
#: ``brokers.match_us_per_entry``, a notification's matching time per routing-table entry, in µs
MAX_MATCH_US_PER_ENTRY = 10_000
#: seeds (the spec's, a random tree's, a cost redraw's): a signed 64-bit integer, what Spark and numpy hold
MAX_SEED = 2**63 - 1
