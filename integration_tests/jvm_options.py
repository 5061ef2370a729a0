"""JVM options for the suite's Spark drivers: short jobs on 2 busy cores.

C1 only and the serial GC: less JIT and GC CPU per JVM. Measured on 2 cores (under other
load, so in CPU seconds): one STREAMING harness driver (JVM start, 8 micro-batches) used
~76 s of CPU with the defaults and ~42-54 s with these; the suite's shared session over the
broadcast, window-parity and multi-stage savepoint tests used 478 s vs 415 s. Nothing a
test asserts depends on them (they change how fast the JVM runs, not what it computes).

A driver also maps a class-data-sharing archive (Java's AppCDS) of the classes a Spark
driver loads, when ``make setup`` dumped one for its class path
(``python integration_tests/jvm_options.py archive``, into ``<venv>/cds``): the JVM then
maps those classes instead of reading and verifying them from the jars. Measured here: a
local[2] session started and ran its first job in 6.2 s instead of 10.9 s. An archive
serves only the class path it was dumped with, so there are two: the venv's pyspark alone
(``plain``) and with the suite's connector jars before it (``jars``, ``jars.class_path()``).
A JVM whose archive does not match (another JDK, a reinstalled jar) runs without it, as
before; its CDS log lines are off, so nothing is printed about it.

While the suite runs (``conftest.py``), a driver's ``java.io.tmpdir`` is a folder of that
run (:data:`TMPDIR_ENV`), removed when it ends: a driver a test SIGKILLs cannot delete its
own temporary folders (Spark's ``artifacts-*``, ``spark-*``, ``blockmgr-*``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: what a JVM reports about an archive it cannot use (it runs on without one)
_CDS_QUIET = "-Xlog:cds=off,cds+dynamic=off"

#: the environment variable naming the folder for the drivers' ``java.io.tmpdir``
TMPDIR_ENV = "PDS_TEST_JVM_TMPDIR"


def archive_path(jars: bool) -> str:
    """Where ``make setup`` dumps the class-data archive of a driver with (``jars``) or
    without the suite's connector jars on its class path: ``<venv>/cds/*.jsa``."""
    return os.path.join(sys.prefix, "cds", "jars.jsa" if jars else "plain.jsa")


def driver_options(jars: bool = False) -> str:
    """:data:`JVM_OPTS` for a Spark driver, plus its class-data archive when there is one.

    Args:
        jars: the driver has ``jars.class_path()`` as ``spark.driver.extraClassPath``.

    Returns:
        The options, for ``spark.driver.extraJavaOptions`` or ``--driver-java-options``.
    """
    options = JVM_OPTS
    archive = archive_path(jars)
    if os.path.isfile(archive):
        options += f" -XX:SharedArchiveFile={archive} {_CDS_QUIET}"
    tmpdir = os.environ.get(TMPDIR_ENV)
    if tmpdir:
        options += f" -Djava.io.tmpdir={tmpdir}"
    return options


def checkpoint_conf() -> dict[str, str]:
    """Spark settings for the suite's sessions beside the JVM options: Spark's checkpoint
    files through Hadoop's ``FileSystem`` API instead of its ``FileContext`` API.

    Without Hadoop's native library (pyspark ships none) the ``FileContext`` path forks a
    shell command for every checkpoint file it writes (``chmod`` on create, ``readlink`` on
    rename): offsets, commits, state deltas, schema and metadata files, on the driver and in
    every task. Both managers write a temporary file and rename it into place, so what a
    killed query leaves is the same; on 2 cores a two-keyed-stage one-query job's
    micro-batch took ~830 ms instead of ~980 ms. The class moved package in Spark 4.1.

    Returns:
        The settings, for ``SparkSession.builder.config``.
    """
    import pyspark

    major, minor = (int(p) for p in pyspark.__version__.split(".")[:2])
    package = "org.apache.spark.sql.execution.streaming"
    if (major, minor) >= (4, 1):
        package += ".checkpointing"
    return {"spark.sql.streaming.checkpointFileManagerClass":
            f"{package}.FileSystemBasedCheckpointFileManager"}


def submit_env(env: dict[str, str] | None = None, jars: bool = False,
               checkpoints: bool = False) -> dict[str, str]:
    """``env`` (default: this process's) for a child that starts its Spark driver through
    its own ``SparkSession.builder`` (notebooks, benchmarks, the packaging job): the
    options reach its JVM through ``PYSPARK_SUBMIT_ARGS``, not through the program.
    ``jars``: the child puts the suite's connector jars on its driver's class path.
    ``checkpoints``: the child also gets :func:`checkpoint_conf` (only for a child running
    this process's pyspark: the class is named per Spark line)."""
    out = dict(os.environ if env is None else env)
    conf = "".join(f" --conf {key}={value}" for key, value in checkpoint_conf().items()
                   ) if checkpoints else ""
    out["PYSPARK_SUBMIT_ARGS"] = (f'--driver-java-options "{driver_options(jars)}"{conf} '
                                  "pyspark-shell")
    return out


#: what the dumping driver runs: a BATCH and a STREAMING job of the project (Arrow, Python
#: workers, a keyed state query with a Parquet sink), and with the jars a Delta table too
_WORKLOAD = r"""
import os, sys
from pyspark.sql import SparkSession
from pyspark_datastream import (Configuration, RuntimeExecutionMode,
                                StreamExecutionEnvironment, Types)
work, jars = sys.argv[1], sys.argv[2] == "jars"
builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
           .config("spark.ui.showConsoleProgress", "false")
           .config("spark.databricks.delta.snapshotPartitions", "2"))
if jars:
    sys.path.insert(0, os.path.dirname(sys.argv[3]))
    from jars import delta_spark_conf
    for key, value in delta_spark_conf().items():
        builder = builder.config(key, value)
spark = (builder.config("spark.sql.shuffle.partitions", "2")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.driver.extraJavaOptions", os.environ["PDS_CDS_OPTS"]).getOrCreate())
rows = [(f"k{i % 7}", i) for i in range(200)]
for mode in ("BATCH", "STREAMING"):
    conf = Configuration()
    conf.set_string("execution.checkpointing.dir", os.path.join(work, "ckpt-" + mode))
    env = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
    env.set_runtime_mode(RuntimeExecutionMode[mode])
    stream = env.from_collection(rows, type_info=Types.TUPLE([Types.STRING(), Types.LONG()]))
    with stream.key_by(lambda r: r[0]).reduce(
            lambda a, b: (a[0], a[1] + b[1])).execute_and_collect() as it:
        assert len(list(it)) > 0
spark.range(100).selectExpr("id % 3 AS k").groupBy("k").count().toPandas()
spark.range(100).write.parquet(os.path.join(work, "parquet"))
if jars and "io.delta.sql.DeltaSparkSessionExtension" in spark.conf.get("spark.sql.extensions", ""):
    spark.range(100).write.format("delta").save(os.path.join(work, "delta"))
    spark.read.format("delta").load(os.path.join(work, "delta")).count()
jvm = spark.sparkContext._gateway.proc  # the driver JVM pyspark started
spark.stop()
jvm.stdin.close()  # it exits at the end of its stdin, and writes the archive as it exits
jvm.wait(timeout=300)
"""


def dump_archives() -> None:
    """Dump both archives (``make setup``): each from a driver of its class path running
    :data:`_WORKLOAD`, whose JVM writes the classes it loaded when it exits; written to a
    temporary name first, so a failed dump leaves no archive (the drivers then run
    without one, and setup goes on: it is a speed-up, not a dependency)."""
    for jars in (False, True):
        target = archive_path(jars)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        partial = target + ".partial"
        if os.path.exists(partial):
            os.remove(partial)
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable,
                   PDS_CDS_OPTS=f"{JVM_OPTS} -XX:ArchiveClassesAtExit={partial} {_CDS_QUIET}")
        env.pop("PYSPARK_SUBMIT_ARGS", None)
        with tempfile.TemporaryDirectory(prefix="pds-cds-") as work:
            done = subprocess.run([sys.executable, "-c", _WORKLOAD, work,
                                   "jars" if jars else "plain", os.path.abspath(__file__)],
                                  env=env, cwd=work)
        if done.returncode != 0 or not os.path.isfile(partial):
            # only a speed-up: the drivers of this class path start without one
            print(f"warning: no class-data archive written at {target} (the dump exited "
                  f"{done.returncode}); drivers of this class path start without one",
                  file=sys.stderr)
            if os.path.exists(partial):
                os.remove(partial)
            continue
        os.replace(partial, target)
        print(f"class-data archive for drivers {'with' if jars else 'without'} the suite's "
              f"jars: {target} ({os.path.getsize(target) // 2**20} MiB)")


if __name__ == "__main__":
    if sys.argv[1:] != ["archive"]:
        raise SystemExit("usage: python integration_tests/jvm_options.py archive")
    dump_archives()
