"""spark-submit entry point: the same analysis job on any Spark master.

    spark-submit --master spark://HOST:7077 analysis/spark_job.py RUNS/RUN_DIR
    spark-submit analysis/spark_job.py CAMPAIGN_DIR        # campaign aggregation

The run directory must be readable under the same path by every executor (a
shared filesystem). The ``scotbed`` package is shipped to executors by the
job itself (``SparkContext.addPyFile``); on the driver it is imported from the
installed distribution, or from this checkout's ``src/`` when not installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import scotbed  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from scotbed.analysis.cli import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
