"""The WordCount STREAMING job with everything it keeps on an S3 server against the same job on
local disk: what object storage costs the storage layer (manifest, key group version files)
and Spark's checkpoint and sink.

``python -m benchmarks.wordcount_s3 [--records 4000000] [--keys 400000] [--backend rocksdb]``
starts the suite's S3 server (moto, ``integration_tests/s3_server.py``, in its own process
on loopback at an ephemeral port) and one ``local[2]`` session whose Hadoop conf points s3a at
it (the s3a jars from ``make setup``). The job is ``benchmarks/wordcount.py``'s STREAMING
reduce (a file stream, available-now, every intermediate count into a Parquet sink); its
checkpoint root, its sink's checkpoint and its output go under one folder: a local temporary
folder (``local``) or ``s3a://<bucket>/...`` (``s3``). Each variant runs once untimed (the
s3a client and the AWS SDK load, Python workers start; not with ``--quick``, a smoke run whose
figures mean nothing), then once timed; both results are checked against pandas. The last
line is JSON: ``s3_ratio`` = s3 seconds / local seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import uuid

from benchmarks.wordcount import QUICK_FILES, QUICK_KEYS, QUICK_RECORDS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 1.5


def _suite_modules() -> tuple:
    """The suite's S3 server and jar modules (``integration_tests/``)."""
    sys.path.insert(0, os.path.join(ROOT, "integration_tests"))
    import jars
    import s3_server

    return jars, s3_server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=4_000_000)
    parser.add_argument("--keys", type=int, default=400_000)
    parser.add_argument("--data", default=".bench-data")
    parser.add_argument("--backend", choices=("rocksdb", "hashmap"), default="rocksdb",
                        help="state.backend.type of the job (rocksdb: key group version "
                             "files under the checkpoint root)")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per variant (median)")
    parser.add_argument("--quick", action="store_true",
                        help="wordcount.py's --quick input (20,000 records, 2,000 keys, 4 "
                             "files), no warm-up (a smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.records, args.keys = QUICK_RECORDS, QUICK_KEYS
    warmup = not args.quick

    from pyspark.sql import SparkSession

    from benchmarks.common import load, local_session, timed_rounds
    from benchmarks.wordcount import expected_counts, generate, streaming_reduce

    jars, s3_module = _suite_modules()
    path = os.path.abspath(os.path.join(args.data, f"words-{args.records}-{args.keys}"))
    generate(path, args.records, args.keys,
             **({"chunk": QUICK_RECORDS // QUICK_FILES} if args.quick else {}))
    expected = expected_counts(path)
    server = s3_module.start("wordcount")
    local = tempfile.mkdtemp(prefix="wordcount-s3-local-")
    try:
        # the session get_execution_environment() makes, plus the s3a jars and settings
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        builder = (SparkSession.builder.master("local[2]").appName("pyspark-datastream")
                   .config("spark.driver.extraClassPath", jars.class_path())
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.session.timeZone", "UTC")
                   .config("spark.sql.execution.arrow.pyspark.enabled", "true")
                   .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS"))
        for key, value in server.hadoop_conf().items():
            builder = builder.config(f"spark.hadoop.{key}", value)
        builder.getOrCreate()
        spark = local_session()  # the session just made, as a program gets it
        spark.conf.set("spark.sql.shuffle.partitions", "4")
        schema = spark.read.parquet(path).schema

        def variant(base: str):
            def run() -> float:
                # a fresh folder per run: every run starts the job from nothing
                return streaming_reduce(spark, path, schema, expected,
                                        root=f"{base}/{uuid.uuid4().hex[:8]}",
                                        backend=args.backend)
            return run, lambda _: None  # streaming_reduce checks against pandas itself

        variants = {"local": variant(local), "s3": variant(f"s3a://{server.bucket}/bench")}
        # the job's own time, as streaming_reduce measures it (not the check)
        seconds: dict[str, list[float]] = {name: [] for name in variants}

        def timed(name: str, run):
            def once() -> float:
                seconds[name].append(run())
                return seconds[name][-1]
            return once

        timed_rounds({name: (timed(name, run), check) for name, (run, check) in variants.items()},
                     args.repeat, warmup)
        timed_runs = {name: times[warmup:] for name, times in seconds.items()}  # [0]: warm-up
        local_s = sorted(timed_runs["local"])[len(timed_runs["local"]) // 2]
        s3_s = sorted(timed_runs["s3"])[len(timed_runs["s3"]) // 2]
        ratio = s3_s / local_s
        objects = server.keys("bench/")
        result = {
            "benchmark": "wordcount_s3", "quick": args.quick,
            "records": args.records, "keys": args.keys, "backend": args.backend,
            "local_s": round(local_s, 3), "s3_s": round(s3_s, 3), "s3_ratio": round(ratio, 3),
            "target": TARGET, "target_met": ratio <= TARGET,
            # both variants' final counts equal pandas' (streaming_reduce exits otherwise)
            "results_equal": True,
            "s3_objects": len(objects),
            "s3_key_group_files": sum(1 for k in objects if k.endswith((".base", ".delta"))),
            "runs": {name: [round(t, 2) for t in times] for name, times in timed_runs.items()},
            "load": load(),
        }
        print(f"records={args.records} keys={args.keys} backend={args.backend}: local "
              f"{local_s:.2f}s, s3 {s3_s:.2f}s ({ratio:.2f}x)")
        print(json.dumps(result))
    finally:
        shutil.rmtree(local, ignore_errors=True)
        server.stop()


if __name__ == "__main__":
    main()
