"""JVM options for the suite's Spark drivers: short jobs on 2 busy cores.

C1 only and the serial GC: less JIT and GC CPU per JVM. Measured on 2 cores (under other
load, so in CPU seconds): one STREAMING harness driver (JVM start, 8 micro-batches) used
~76 s of CPU with the defaults and ~42-54 s with these; the suite's shared session over the
broadcast, window-parity and multi-stage savepoint tests used 478 s vs 415 s. Nothing a
test asserts depends on them (they change how fast the JVM runs, not what it computes).
"""

from __future__ import annotations

import os

JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def submit_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) for a child that starts its Spark driver through
    its own ``SparkSession.builder`` (notebooks, benchmarks, the packaging job): the
    options reach its JVM through ``PYSPARK_SUBMIT_ARGS``, not through the program."""
    out = dict(os.environ if env is None else env)
    out["PYSPARK_SUBMIT_ARGS"] = f'--driver-java-options "{JVM_OPTS}" pyspark-shell'
    return out
