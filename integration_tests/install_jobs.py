"""A BATCH and a STREAMING keyed job, run by ``test_install.py`` inside the venvs it installs
the built wheel into (a Databricks-Runtime-like one, one with databricks-connect).

``python install_jobs.py INPUT.json WORKDIR [--remote sc://HOST:PORT] [--build-only]``: reads
``[[key, value], ...]``, sums the values per key in BATCH (one total per key) and in STREAMING
over a Parquet file stream (every running total), on a local session or over Spark Connect
(through ``DatabricksSession`` where databricks-connect is installed). ``--build-only``
declares the STREAMING job and returns its plan without running it. Prints one JSON line:
the results, the server's Spark version, and where pyspark and the package came from (and
which pip-installed distribution, if any, owns the ``pyspark`` module).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def session(remote: str | None) -> Any:
    """A local session, or one over Spark Connect at ``remote`` (databricks-connect's
    ``DatabricksSession`` when it is installed, as its users build theirs)."""
    if remote:
        try:
            from databricks.connect import DatabricksSession
        except ImportError:
            from pyspark.sql import SparkSession

            return SparkSession.builder.remote(remote).getOrCreate()
        return DatabricksSession.builder.remote(remote).getOrCreate()
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("workdir")
    parser.add_argument("--remote", default=None)
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyspark

    spark = session(args.remote)
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pyspark_datastream as pds

    with open(args.data) as f:
        data = [(k, v) for k, v in json.load(f)]
    from importlib.metadata import packages_distributions

    out: dict[str, object] = {"pyspark_version": pyspark.__version__,
                              "pyspark_file": pyspark.__file__, "package_file": pds.__file__,
                              # which installed distribution pip knows the module by, if any
                              "pyspark_distribution": packages_distributions().get("pyspark"),
                              "session": type(spark).__module__, "spark_version": spark.version}
    src = os.path.join(args.workdir, "stream_in")
    os.makedirs(src)
    pq.write_table(pa.table({"k": [k for k, _ in data],
                             "v": pa.array([v for _, v in data], pa.int64())}),
                   os.path.join(src, "part-0.parquet"))
    conf = pds.Configuration()
    conf.set_string("execution.checkpointing.dir", os.path.join(args.workdir, "checkpoints"))
    senv = pds.StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
    senv.set_runtime_mode(pds.RuntimeExecutionMode.STREAMING)
    running = (senv.from_dataframe(spark.readStream.schema("k string, v long").parquet(src))
               .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])))
    if args.build_only:
        running.print()
        out["plan"] = json.loads(senv.get_execution_plan())
        print(json.dumps(out))
        return
    out["streaming"] = sorted(tuple(r) for r in running.execute_and_collect("install-stream"))

    env = pds.StreamExecutionEnvironment.get_execution_environment(spark=spark)
    env.set_runtime_mode(pds.RuntimeExecutionMode.BATCH)
    totals = env.from_collection(data).key_by(lambda r: r[0]).reduce(
        lambda a, b: (a[0], a[1] + b[1]))
    out["batch"] = sorted(totals.execute_and_collect())
    print(json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main()
